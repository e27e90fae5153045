import type { AckDeletePolicy } from './ack-policy.js';
import { bindingKey, describeBinding, type HandledStream } from './handler-binding.js';
import type { IncomingEntry, StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';
import type { ServerParts, ServerState } from './server-parts.js';

/**
 * The server's side of recovery (claims, leases, dead letters): prefetch slots for claimed
 * entries, their dispatch through the same accounting as reads, and what is in flight here. The
 * server exposes these as its `@internal` API (`RecoveryHost`); none of it is exported from index.ts.
 */
export class RecoveryHooks {
  constructor(
    private readonly options: Pick<ResolvedServerOptions, 'prefetch' | 'maxPrefetchBytes'>,
    private readonly state: () => ServerState,
    /** `undefined` before `listen()` built them. */
    private readonly parts: () => ServerParts | undefined,
  ) {}

  /** Bytes of the fetched-but-unacked entries, now and at most so far, and the caps (tests, sizing). */
  prefetchUsage(): { heldBytes: number; peakHeldBytes: number; prefetch: number; maxPrefetchBytes: number } {
    const dispatcher = this.parts()?.dispatcher;
    const bytes = dispatcher?.bytesHeld() ?? { held: 0, peak: 0 };
    const prefetch = dispatcher?.prefetchSize ?? this.options.prefetch;
    return { heldBytes: bytes.held, peakHeldBytes: bytes.peak, prefetch, maxPrefetchBytes: this.options.maxPrefetchBytes };
  }

  /** Prefetch slots free now (not held by entries nor reserved by a read or claim). */
  freePrefetchSlots(): number {
    return this.parts()?.dispatcher.freeSlots() ?? 0;
  }

  /**
   * Reserves up to `max` prefetch slots for entries a claim (XCLAIM/XAUTOCLAIM) is about to take.
   * A blocking read may hold every free slot while it waits on idle streams: it is interrupted
   * (CLIENT UNBLOCK) and its slots go to the claim first, waiting at most `waitMs`. Claim at most
   * the returned count, then pass it to `dispatchEntries(…, reserved)` (or give it back with
   * `releasePrefetchSlots`).
   */
  async reservePrefetchSlots(max: number, waitMs = 250): Promise<number> {
    const parts = this.parts();
    if (parts === undefined || this.state() !== 'listening' || max <= 0) return 0;
    const { dispatcher } = parts;
    // Slots held by entries come back only as handlers finish: not worth waiting for. Slots
    // reserved by reads come back soon (a blocked read is made to return now). Counted before
    // our own reservation, which is no read to wait for.
    const reservedByOthers = dispatcher.reservedCount();
    const now = dispatcher.reserveNow(max);
    if (now >= max || reservedByOthers === 0) return now;
    const later = dispatcher.reserveLater(max - now);
    const timer = setTimeout(later.cancel, waitMs);
    await Promise.all(parts.readers.map((reader) => reader.interrupt()));
    const more = await later.reserved;
    clearTimeout(timer);
    return now + more;
  }

  /** Gives back slots from `reservePrefetchSlots` that no entry used. */
  releasePrefetchSlots(count: number): void {
    if (count > 0) this.parts()?.dispatcher.unreserve(count);
  }

  /** Whether this process holds (queued, running or awaiting its ack) that entry. */
  isInFlight(stream: string, group: string, id: string): boolean {
    const parts = this.parts();
    const binding = parts?.bindingsByKey.get(bindingKey(stream, group));
    return binding !== undefined && (parts?.dispatcher.has(binding, id) ?? false);
  }

  /**
   * Hands claimed entries to the handlers through the same accounting as reads (prefetch,
   * concurrency, ack). `reserved`: slots from `reservePrefetchSlots`, released here once the
   * entries hold theirs. An entry already in flight here is skipped. Returns how many entries
   * were new.
   */
  dispatchEntries(stream: string, group: string, entries: readonly IncomingEntry[], reserved = 0): number {
    const parts = this.parts();
    const binding = parts?.bindingsByKey.get(bindingKey(stream, group));
    if (parts === undefined || binding === undefined) {
      throw new Error(`no handler of this server reads stream "${stream}" with group "${group}"`);
    }
    const { dispatcher } = parts;
    let admitted = 0;
    // While closing (before the handoff: close() waits for the tick that claimed them) they are
    // queued without starting, and handed off with the other unstarted entries.
    const state = this.state();
    if (state === 'listening' || state === 'closing') {
      const before = dispatcher.inFlightCount();
      dispatcher.admit(binding, entries);
      admitted = dispatcher.inFlightCount() - before;
      parts.telemetry?.consumed(stream, group, admitted);
    }
    // After admit: the entries now hold slots, so giving the reservation back frees nothing twice.
    if (reserved > 0) dispatcher.unreserve(reserved);
    return admitted;
  }

  /** Every stream + group this server reads, with the handler's options. */
  handledStreams(): HandledStream[] {
    return this.parts()?.bindings.map(describeBinding) ?? [];
  }

  /**
   * Ids this process still works on for a stream + group (lease renewal): held, and neither
   * acked, nacked nor being handed off.
   */
  inFlightIds(stream: string, group: string): string[] {
    const parts = this.parts();
    const binding = parts?.bindingsByKey.get(bindingKey(stream, group));
    if (parts === undefined || binding === undefined) return [];
    return parts.dispatcher.unsettledIdsOf(binding);
  }

  /** Work-queue mode: the XACKDEL policy of a stream + group (dead-letter moves delete the same way). */
  deletePolicyFor(stream: string, group: string): AckDeletePolicy | undefined {
    const parts = this.parts();
    const binding: StreamBinding | undefined = parts?.bindingsByKey.get(bindingKey(stream, group));
    return binding === undefined ? undefined : parts?.deletePolicyOf(binding);
  }
}
