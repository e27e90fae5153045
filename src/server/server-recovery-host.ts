import type { RedisClient, RedisConnection } from '../redis/connection.js';
import type { LeaseExtender, RecoveryHost } from '../recovery/recovery-host.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { AckDeletePolicy } from './ack-policy.js';
import type { HandlingHooks } from './entry-handling.js';
import { bindingKey, describeBinding, type HandledStream } from './handler-binding.js';
import type { HandlerLanes } from './handler-lanes.js';
import type { InFlightEntry, IncomingEntry, StreamBinding } from './in-flight.js';
import type { ServerState } from './liveness.js';
import type { PrefetchSlots } from './prefetch-slots.js';
import { grantFromLimits } from './binding-limits.js';
import type { ServerFlow } from './server-flow.js';
import type { StreamReader } from './stream-reader.js';
import { RedisStreamsAbortError, type DeliveryAborts } from '../lifecycle/delivery-abort.js';
import { cancelReasonOf } from '../lifecycle/cancel.js';

/** What the host works with: the running server's parts (server-parts.ts builds it with them). */
export interface ServerRecoveryHostParts {
  readonly consumer: string;
  readonly handoffConsumer: string;
  readonly state: () => ServerState;
  readonly bindings: readonly StreamBinding[];
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  /** The readers: a claim waiting for slots interrupts their blocked reads. Filled once they are built. */
  readonly readers: readonly StreamReader[];
  readonly commands: RedisClient;
  readonly hooks: HandlingHooks;
  /** Work-queue mode: the XACKDEL policy of a binding while the server has XACKDEL. */
  readonly deletePolicyOf: (binding: StreamBinding) => AckDeletePolicy | undefined;
  /** Set only when OpenTelemetry is there and on: claimed entries count as consumed. */
  readonly telemetry: Telemetry | undefined;
  /** Paused groups take no claims; claims of a `globalConcurrency` handler take its permits. */
  readonly flow: ServerFlow;
  /** A lost lease aborts its delivery's `ctx.signal`. */
  readonly aborts: DeliveryAborts;
  /** The server's connection option and `startupTimeout`, for the lease thread's own connection. */
  readonly leaseThreadConnection: { connection: RedisConnection | undefined; connectTimeout: number };
}

/**
 * The server's side of recovery (claims, leases, dead letters): prefetch slots for claimed
 * entries, their dispatch through the same accounting as reads, and what is in flight here. The
 * recovery scheduler's `RecoveryHost`; none of it is exported from index.ts.
 */
export class ServerRecoveryHost implements RecoveryHost {
  readonly consumer: string;
  private readonly bindingsByKey: ReadonlyMap<string, StreamBinding>;
  /** `globalConcurrency` permits and `rateLimit` tokens taken with claim slots, per binding, not yet handed to entries. */
  private readonly claimGrants = new Map<StreamBinding, { permits: number; tokens: number }>();

  constructor(private readonly parts: ServerRecoveryHostParts) {
    this.consumer = parts.consumer;
    this.bindingsByKey = new Map(parts.bindings.map((binding) => [binding.key, binding]));
  }

  /** Bytes of the fetched-but-unacked entries, now and at most so far, and the caps (tests, sizing). */
  prefetchUsage(): { heldBytes: number; peakHeldBytes: number; prefetch: number; maxPrefetchBytes: number } {
    const { slots } = this.parts;
    const bytes = slots.bytesHeld();
    return { heldBytes: bytes.held, peakHeldBytes: bytes.peak, prefetch: slots.prefetchSize, maxPrefetchBytes: slots.maxPrefetchBytes };
  }

  /** Prefetch slots free now (not held by entries nor reserved by a read or claim). */
  freePrefetchSlots(): number {
    return this.parts.slots.freeSlots();
  }

  /**
   * Reserves up to `max` prefetch slots for entries a claim (XCLAIM/XAUTOCLAIM) is about to take.
   * A blocking read may hold every free slot while it waits on idle streams: it is interrupted
   * (CLIENT UNBLOCK) and its slots go to the claim first, waiting at most `waitMs`. Claim at most
   * the returned count, then pass it to `dispatchEntries(…, reserved)` (or give it back with
   * `releasePrefetchSlots`).
   */
  async reservePrefetchSlots(max: number, waitMs = 250, target?: { stream: string; group: string }): Promise<number> {
    const reserved = await this.reserveSlotsOnly(max, waitMs);
    const binding = target === undefined ? undefined : this.bindingsByKey.get(bindingKey(target.stream, target.group));
    if (binding === undefined || reserved === 0) return reserved;
    // A paused group takes no claims either: they wait (pending, counted) for the resume.
    if (this.parts.flow.isPaused(binding)) {
      this.parts.slots.unreserve(reserved);
      return 0;
    }
    const { limits } = binding;
    if (limits === undefined) return reserved;
    const { permits, rate } = limits;
    // Claimed entries run as read ones do: within the handler's shared limits. None to be had (or
    // Redis refused the request): the claim waits for a later tick.
    const granted = await Promise.resolve(grantFromLimits(limits, reserved, permits?.roomHere(binding.concurrency, binding.concurrency) ?? reserved)).then(
      (grant) => grant.granted,
      () => 0,
    );
    if (granted < reserved) this.parts.slots.unreserve(reserved - granted);
    const grants = this.claimGrants.get(binding) ?? { permits: 0, tokens: 0 };
    this.claimGrants.set(binding, { permits: grants.permits + (permits === undefined ? 0 : granted), tokens: grants.tokens + (rate === undefined ? 0 : granted) });
    return granted;
  }

  private async reserveSlotsOnly(max: number, waitMs: number): Promise<number> {
    if (this.parts.state() !== 'listening' || max <= 0) return 0;
    const { slots, readers } = this.parts;
    // Slots held by entries come back only as handlers finish: not worth waiting for. Slots
    // reserved by reads come back soon (a blocked read is made to return now). Counted before
    // our own reservation, which is no read to wait for.
    const reservedByOthers = slots.reservedCount();
    const now = slots.reserveNow(max);
    if (now >= max || reservedByOthers === 0) return now;
    const later = slots.reserveLater(max - now);
    const timer = setTimeout(later.cancel, waitMs);
    await Promise.all(readers.map((reader) => reader.interrupt()));
    const more = await later.reserved;
    clearTimeout(timer);
    return now + more;
  }

  /** Gives back slots from `reservePrefetchSlots` that no entry used. */
  releasePrefetchSlots(count: number, target?: { stream: string; group: string }): void {
    if (count <= 0) return;
    this.parts.slots.unreserve(count);
    const binding = target === undefined ? undefined : this.bindingsByKey.get(bindingKey(target.stream, target.group));
    if (binding !== undefined) this.giveBackClaimGrants(binding, this.takeClaimGrants(binding, count), 0);
  }

  /** Up to `count` of the permits and tokens taken with claim slots of `binding` and not yet given to entries. */
  private takeClaimGrants(binding: StreamBinding, count: number): { permits: number; tokens: number } {
    const grants = this.claimGrants.get(binding);
    if (grants === undefined) return { permits: 0, tokens: 0 };
    const taken = { permits: Math.min(grants.permits, count), tokens: Math.min(grants.tokens, count) };
    this.claimGrants.set(binding, { permits: grants.permits - taken.permits, tokens: grants.tokens - taken.tokens });
    return taken;
  }

  /** What the claim's entries (`used` of them) did not use goes back. */
  private giveBackClaimGrants(binding: StreamBinding, taken: { permits: number; tokens: number }, used: number): void {
    if (taken.permits > used) binding.limits?.permits?.release(taken.permits - used);
    if (taken.tokens > used) binding.limits?.rate?.refund(taken.tokens - used).catch(() => undefined);
  }

  /** Whether this process holds (queued, running or awaiting its ack) that entry. */
  isInFlight(stream: string, group: string, id: string): boolean {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    return binding !== undefined && this.parts.slots.has(binding, id);
  }

  /**
   * Hands claimed entries to the handlers through the same accounting as reads (prefetch,
   * concurrency, ack). `reserved`: slots from `reservePrefetchSlots`, released here once the
   * entries hold theirs. An entry already in flight here is skipped. Returns how many entries
   * were new.
   */
  dispatchEntries(stream: string, group: string, entries: readonly IncomingEntry[], reserved = 0): number {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    if (binding === undefined) throw new Error(`no handler of this server reads stream "${stream}" with group "${group}"`);
    const { slots, lanes } = this.parts;
    let admitted = 0;
    // While closing (before the handoff: close() waits for the tick that claimed them) they are
    // queued without starting, and handed off with the other unstarted entries.
    const state = this.parts.state();
    const grants = reserved > 0 && binding.limits !== undefined ? this.takeClaimGrants(binding, reserved) : undefined;
    if (state === 'listening' || state === 'closing') {
      admitted = slots.admit(binding, entries);
      // The entries just queued hold the permits their claim took, each until its slot is released.
      const { queue } = binding;
      const marked = Math.min(admitted, grants?.permits ?? 0);
      for (let i = queue.length - admitted; i < queue.length - admitted + marked; i++) (queue[i] as InFlightEntry).permit = true;
      lanes.queued(binding, admitted);
      this.parts.telemetry?.consumed(stream, group, admitted);
    }
    if (grants !== undefined) this.giveBackClaimGrants(binding, grants, admitted);
    // After admit: the entries now hold slots, so giving the reservation back frees nothing twice.
    if (reserved > 0) slots.unreserve(reserved);
    return admitted;
  }

  /** Every stream + group this server reads, with the handler's options. */
  handledStreams(): HandledStream[] {
    return this.parts.bindings.map(describeBinding);
  }

  /**
   * Ids this process still works on for a stream + group (lease renewal): held, and neither
   * acked, nacked nor being handed off.
   */
  inFlightIds(stream: string, group: string): string[] {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    return binding === undefined ? [] : this.parts.slots.unsettledIdsOf(binding);
  }

  /** The lease keeper found an entry held by another consumer now: its handler's `ctx.signal` aborts (when it has one). */
  leaseLost(stream: string, group: string, id: string, owner: string | null): void {
    const { aborts } = this.parts;
    if (!aborts.has(stream, group, id)) return;
    const lost = (holder: string) =>
      aborts.abortEntry(stream, group, id, new RedisStreamsAbortError('lease-lost', `the lease of entry ${id} of "${stream}" (group "${group}") was lost: ${holder}`));
    if (owner !== null) return void lost(`consumer "${owner}" holds it now`);
    // No longer pending: an operator's cancel leaves its reason for this worker.
    cancelReasonOf(this.parts.commands, stream, id).then(
      (reason) =>
        reason === undefined
          ? lost('it is no longer pending')
          : aborts.abortEntry(stream, group, id, new RedisStreamsAbortError('cancelled', `entry ${id} of "${stream}" was cancelled: ${reason}`)),
      () => lost('it is no longer pending'),
    );
  }

  /** Work-queue mode: the XACKDEL policy of a stream + group (dead-letter moves delete the same way). */
  deletePolicyFor(stream: string, group: string): AckDeletePolicy | undefined {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    return binding === undefined ? undefined : this.parts.deletePolicyOf(binding);
  }

  /** The consumer `close()` hands unstarted entries to. */
  handoffConsumerName(): string {
    return this.parts.handoffConsumer;
  }

  commandConnection(): RedisClient {
    return this.parts.commands;
  }

  leaseThreadConnection(): { connection: RedisConnection | undefined; connectTimeout: number } {
    return this.parts.leaseThreadConnection;
  }

  /** Installed by recovery to make `ctx.extendLease()` renew idle times. */
  setLeaseExtender(extender: LeaseExtender | undefined): void {
    this.parts.hooks.leaseExtender = extender;
  }
}
