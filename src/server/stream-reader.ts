import { Redis } from '../redis/ioredis.js';
import { Abortable } from '../abortable.js';
import type { RedisClient } from '../redis/connection.js';
import { errorMessage } from '../error-message.js';
import { isNoGroupError } from './groups.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';
import { ReaderPulse } from './liveness.js';
import { PriorityRead } from './priority-read.js';
import { forEachStreamOfRawReply, forEachStreamOfReply, type ReadEntry, type ReplyEntry } from './read-reply.js';
import type { ReaderHost } from './reader-host.js';
import { deliverReRead } from './reread-delivery.js';
import { grantFromLimits, refundTokens, returnGrant, type BindingLimits, type LimitsGrant } from './binding-limits.js';
import { LateStarts } from './start-tokens.js';
import { ReadTokens } from './read-tokens.js';
import { limitsTheReader } from './handler-extras.js';
import type { GlobalPermits } from '../flow/global-permits.js';
import type { SharedRateLimit } from '../flow/shared-rate-limit.js';
import { patternStreamOf } from './handled-stream.js';
import { PERMIT_RETRY_MS } from './server-flow.js';

/** Unblocks of a read that went out before a pause was seen: enough for it to reach Redis (~0.5 s). */
const STALE_READ_UNBLOCKS = 50;
const STALE_READ_RETRY_MS = 10;

/** Non-blocking reads of the streams with a backlog only, before all streams are read again. */
const MAX_FOCUSED_READS = 3;

/**
 * One blocking connection reading all streams of one group. It first re-reads this consumer's
 * own pending entries (id `0`, so a restarted worker gets its unfinished work back), then reads
 * new entries with `>`. COUNT never exceeds the free prefetch slots. Errors back off and retry;
 * NOGROUP recreates the group.
 */
export class StreamReader {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private reading = false;
  /** Counts the reads sent, so an unblock meant for one read never ends the next. */
  private readSerial = 0;
  private clientId: number | undefined;
  private failures = 0;
  private sleepTimer: NodeJS.Timeout | undefined;
  private wakeSleep: (() => void) | undefined;
  private readonly byStream = new Map<string, StreamBinding>();
  /** Streams whose last read filled COUNT (they have a backlog). */
  private backlog: string[] = [];
  private focusedInARow = 0;
  /** The commands in flight; aborted when stop() drops the connection. */
  private readonly inFlight = new Abortable();
  private readonly blockingHead: (string | number)[];
  private readonly blockingTail: (string | number)[];
  /** Read start and completion times, for health checks. */
  readonly pulse = new ReaderPulse();
  /** A handler of this group wants the exact bytes (`extras.raw: 'buffers'`): read with the Buffer variant. */
  private readonly readsBytes: boolean;
  /** The one binding of a reader its limits gate (handler-extras.ts `limitsTheReader`), else undefined. */
  private readonly limited: StreamBinding | undefined;
  /** Set when this reader reads one pattern's priority lanes (priority-read.ts reads them). */
  private readonly priorities: PriorityRead | undefined;
  /** A rate-limited (not batch) binding's read entries whose tokens go stale before they start (start-tokens.ts). */
  private readonly lateStarts: LateStarts | undefined;
  /** Its tokens, taken for several reads at once while they keep being used (read-tokens.ts); with `lateStarts` only. */
  private readonly readTokens: ReadTokens | undefined;

  constructor(
    readonly group: string,
    readonly bindings: readonly StreamBinding[],
    readonly client: RedisClient,
    private readonly host: ReaderHost,
    /** Most slots this reader may reserve, so a reader blocked on idle streams cannot starve the others. */
    private readonly slotShare: number,
  ) {
    for (const binding of bindings) this.byStream.set(binding.stream, binding);
    this.readsBytes = bindings.some((binding) => binding.raw === 'buffers');
    this.limited = StreamReader.limitedBindingOf(bindings);
    const rate = this.limited?.limits?.rate;
    this.lateStarts = rate === undefined || this.limited === undefined || this.limited.batch !== undefined ? undefined : new LateStarts(rate, this.limited);
    // Tokens served from an earlier take are older than the read: only where late starters get fresh ones.
    this.readTokens = rate === undefined || this.lateStarts === undefined ? undefined : new ReadTokens(rate);
    this.priorities = PriorityRead.of(bindings, host.consumer, host.blockMs, client, this.readsBytes, (...args) => this.xreadgroup(...args));
    const streams = bindings.map((binding) => binding.stream);
    this.blockingHead = ['GROUP', group, host.consumer, 'COUNT'];
    this.blockingTail = ['BLOCK', host.blockMs, 'STREAMS', ...streams, ...streams.map(() => '>')];
    client.on('close', this.forgetClientId);
  }

  /**
   * The one binding of a reader its shared limits gate (handler-extras.ts `limitsTheReader`: it is
   * read alone), else undefined. Its connection must not resend a read dropped unanswered (readLimited).
   */
  static limitedBindingOf(bindings: readonly StreamBinding[]): StreamBinding | undefined {
    const only = bindings.length === 1 ? bindings[0] : undefined;
    return only !== undefined && limitsTheReader(only) ? only : undefined;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Whether this reader reads `binding`'s stream in its group. */
  reads(stream: string, group: string): boolean {
    return this.group === group && this.bindings.some((binding) => patternStreamOf(binding) === stream);
  }

  /**
   * A group of this reader was just paused: its blocked read, sent before, must return now. The
   * CLIENT UNBLOCK goes over the command connection and may reach Redis before the read itself
   * (sent just before the pause was seen): it is repeated while that same read is in flight.
   */
  async interruptStaleRead(): Promise<void> {
    const stale = this.readSerial;
    for (let attempt = 0; attempt < STALE_READ_UNBLOCKS && this.reading && this.readSerial === stale; attempt++) {
      await this.unblock();
      if (this.reading && this.readSerial === stale) await new Promise((resolve) => setTimeout(resolve, STALE_READ_RETRY_MS));
    }
  }

  /** Makes a blocked read return now (as if its BLOCK timed out), so its reserved slots come back. */
  async interrupt(): Promise<void> {
    if (this.reading) await this.unblock();
  }

  /** Stops reading: unblocks a blocked read (CLIENT UNBLOCK) or, failing that, drops the connection. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.cancelSleep();
    if (this.loop === undefined) return;
    // Not awaited: with Redis down the UNBLOCK itself would wait; the grace period bounds us.
    if (this.reading) void this.unblock();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs)));
    const stopped = await Promise.race([this.loop.then(() => false), timedOut]);
    clearTimeout(timer);
    if (stopped) {
      // A read that can neither be unblocked nor answered (connection down): drop it.
      this.inFlight.abort(new Error('reader stopped'));
      this.client.disconnect(false);
      await this.loop;
    }
    this.client.off('close', this.forgetClientId);
  }

  private readonly forgetClientId = (): void => {
    this.clientId = undefined;
  };

  private async run(): Promise<void> {
    try {
      await this.readOwnPending();
      while (!this.stopping) await this.readNew();
    } catch (error) {
      this.host.logger.error(`reader of group "${this.group}" stopped: ${errorMessage(error)}`);
    } finally {
      this.lateStarts?.stop();
      this.readTokens?.giveBack();
    }
  }

  /**
   * Reserves slots for one read over `streams` streams. XREADGROUP's COUNT applies per stream:
   * COUNT ≤ readBatch and COUNT × streams ≤ the free slots, so the pending bound holds; and
   * COUNT × streams × the estimated entry size ≤ the bytes left under `maxPrefetchBytes` (at most
   * half of it per read; before any entry was seen, entries of FIRST_READ_ENTRY_BYTES are assumed). When nothing
   * is held and one entry does not fit (an entry larger than the cap), COUNT is 1: it is handled
   * alone, never stuck. While acks are queued or in flight (slots come back within a round trip)
   * it waits until a read of at least half the prefetch (or half the byte cap, or a full
   * readBatch) fits: reading whatever few slots came back first would split the backlog into ever
   * smaller reads, each paying a read and an ack round trip. Otherwise (idle, or handlers still
   * busy) it reads what is free at once. Returns COUNT (0 when stopping) and the bytes reserved;
   * the caller gives back `count * streams` slots and those bytes (`unreserveRead`).
   */
  private async reserveSlots(streams: number): Promise<{ count: number; bytes: number }> {
    const { slots, readBatch } = this.host;
    for (;;) {
      if (this.stopping) return { count: 0, bytes: 0 };
      const slotRoom = Math.min(this.slotShare, slots.freeSlotsForReads());
      let count = Math.min(readBatch, Math.floor(Math.min(slotRoom, slots.entriesWithinByteCap()) / streams));
      if (count === 0 && slotRoom >= streams && slots.holdsNothing()) count = 1;
      const worthWaitingFor = Math.min(this.slotShare, slots.prefetchSize / 2, slots.entriesInHalfByteCap());
      const lowWater = Math.max(1, Math.min(readBatch, Math.floor(worthWaitingFor / streams)));
      if (count >= lowWater || (count > 0 && (!slots.isAccepting || !slots.slotsReturning()))) {
        return { count, bytes: slots.reserveRead(count * streams) };
      }
      // Short of bytes (slots are free): the next release may make room.
      await (count > 0 || slotRoom >= streams ? slots.waitForChange() : slots.waitForSlot(streams));
    }
  }

  private async readNew(): Promise<void> {
    const { pauses } = this.host.flow;
    const pauseVersion = pauses.version;
    const readable = this.unpausedBindings();
    if (readable.length === 0) {
      await this.pulse.holding('paused', this.waitUntil(undefined, (wake) => void this.host.flow.pauses.waitForChange().then(wake)));
      return;
    }
    if (this.limited !== undefined) {
      await this.readLimited(this.limited, this.limited.limits as BindingLimits);
      return;
    }
    const all = readable === this.bindings;
    // COUNT applies per stream and the slots are reserved for every stream read: with a backlog
    // on some streams only, reading all of them would split the free slots among idle ones. So
    // after a read that filled COUNT on some streams, the next reads (non-blocking) take only
    // those, at most MAX_FOCUSED_READS in a row: every few reads all streams are read again.
    const behind = all ? this.backlog : this.backlog.filter((stream) => readable.some((binding) => binding.stream === stream));
    const focus =
      this.priorities === undefined && behind.length > 0 && behind.length < readable.length && this.focusedInARow < MAX_FOCUSED_READS ? behind : undefined;
    const streams = focus?.length ?? readable.length;
    const reservation = await this.reserveSlots(streams);
    if (reservation.count === 0) return;
    const { count, bytes } = reservation;
    const reserved = count * streams;
    let reply: unknown;
    try {
      if (this.clientId === undefined && this.client instanceof Redis) await this.fetchClientId();
      // A group paused (or resumed) while this read waited for slots: the streams to read changed.
      if (pauses.version !== pauseVersion) {
        this.host.slots.unreserveRead(reserved, bytes);
        return;
      }
      this.reading = true;
      this.readSerial++;
      const read =
        this.priorities !== undefined
          ? this.priorities.read(readable, count)
          : focus !== undefined
            ? this.xreadgroup(...this.blockingHead, count, 'STREAMS', ...focus, ...focus.map(() => '>'))
            : all
              ? this.xreadgroup(...this.blockingHead, count, ...this.blockingTail)
              : this.xreadgroup(...this.blockingHead, count, 'BLOCK', this.host.blockMs, 'STREAMS', ...readable.map((b) => b.stream), ...readable.map(() => '>'));
      reply = await this.inFlight.wrap(this.pulse.track(read));
      this.failures = 0;
    } catch (error) {
      this.host.slots.unreserveRead(reserved, bytes);
      this.backlog = [];
      await this.recover(error);
      return;
    } finally {
      this.reading = false;
    }
    this.focusedInARow = focus === undefined ? 0 : this.focusedInARow + 1;
    this.host.slots.unreserveRead(reserved, bytes);
    let delivered = 0;
    const backlog: string[] = [];
    forEachStreamOfRawReply(reply, (stream, entries) => {
      const binding = this.byStream.get(stream);
      delivered += entries.length;
      if (entries.length >= count) backlog.push(stream);
      if (binding !== undefined && entries.length > 0) this.admitFresh(binding, entries);
    });
    this.backlog = backlog;
    this.priorities?.answered(reply);
    // A short read means no backlog: let the handlers just started run their first steps before
    // the next read is written to the socket, or that write sits in front of every handler. A
    // full read means backlog: read on at once so Redis works while the handlers do.
    if (delivered > 0 && delivered < reserved) await afterPendingMicrotasks();
  }

  /**
   * A read of a binding with shared limits (it has this reader to itself). Entries are read only
   * once the limits granted them, so an entry beyond the limit is never read (no delivery
   * counted) and a back-off holds for every entry: grant, then a non-blocking read of at most
   * that many, then what the read did not use goes back. With nothing to read, the reader waits
   * for new entries with XREAD BLOCK (which delivers nothing) rather than in XREADGROUP: a reader
   * blocked holding tokens or permits would keep them from the other workers, and would read
   * entries arriving during a back-off. An entry added between the two commands waits for the
   * next one or for `blockMs`.
   *
   * Tokens count starts, so the entries a grant's tokens bring must start when it is taken, not
   * later on top of the tokens of then (a Redis restart broke the bound so):
   * - A read takes up to `readBatch` (as without the limit, so reads go on while the handlers
   *   run); its entries still queued behind busy handlers once its tokens are no longer fresh give
   *   them back and each takes a fresh one before it starts (start-tokens.ts).
   * - It runs right after its grant. The grant goes over the command connection; a read sent
   *   while this connection reconnects would wait in ioredis' queue, and one unanswered when it
   *   dropped would be sent again after the reconnect. So the grant waits for this connection to
   *   be up, the read is sent only while it is, and this connection does not resend
   *   (server-connections.ts `openReader`): an unanswered read fails. It keeps its tokens (a failed
   *   reply is no proof nothing was read); its permits go back, no entry of it being in hand.
   */
  private async readLimited(binding: StreamBinding, limits: BindingLimits): Promise<void> {
    const { pauses } = this.host.flow;
    const pauseVersion = pauses.version;
    const { count, bytes } = await this.reserveSlots(1);
    if (count === 0) return;
    let granted = 0;
    let admitted = 0;
    let sent = false;
    let wait: (() => Promise<void>) | undefined;
    let failure: { error: unknown } | undefined;
    try {
      if (!this.connected()) await this.untilConnected();
      let takenAt = performance.now();
      // Tokens in hand (read-tokens.ts) and no permit asked: granted at once, no promise to await.
      const grant = grantFromLimits(limits, count, this.permitRoom(binding, limits, count), this.readTokens);
      ({ granted, wait } = this.grantOutcome(limits, grant instanceof Promise ? await grant : grant));
      if (this.readTokens !== undefined) takenAt = this.readTokens.servedTakenAt;
      // Paused while it waited for slots or for its grant: nothing is read, all goes back.
      if (granted > 0 && pauses.version === pauseVersion) {
        this.mustBeConnected();
        sent = true;
        const read = this.xreadgroup(...this.blockingHead, granted, 'STREAMS', binding.stream, '>');
        const reply = await this.inFlight.wrap(this.pulse.track(read));
        this.failures = 0;
        forEachStreamOfRawReply(reply, (stream, entries) => {
          if (stream === binding.stream && entries.length > 0) admitted += this.admitFresh(binding, entries, takenAt);
        });
      }
    } catch (error) {
      failure = { error };
    } finally {
      // Before any wait or back-off: the slots, tokens and permits go to the others meanwhile.
      this.host.slots.unreserveRead(count, bytes);
      // A read sent and unanswered keeps its tokens: it may have run.
      returnGrant(limits, granted - admitted, sent && failure !== undefined);
      // Short or failed: the tokens left for further reads and the spare permits go back too.
      if (granted > 0 && (admitted < granted || failure !== undefined)) {
        this.readTokens?.giveBack();
        limits.permits?.giveBackSpares();
      }
    }
    if (failure !== undefined) {
      await this.recover(failure.error);
      return;
    }
    if (pauses.version !== pauseVersion) return;
    // Nothing granted: the slots are back before the wait, for the other readers and for claims.
    if (wait !== undefined) {
      await this.pulse.holding('limited', wait());
      return;
    }
    if (admitted > 0) {
      if (admitted < granted) await afterPendingMicrotasks();
      return;
    }
    try {
      if (this.clientId === undefined && this.client instanceof Redis) await this.fetchClientId();
      this.reading = true;
      this.readSerial++;
      await this.inFlight.wrap(this.pulse.track(this.client.call('XREAD', 'COUNT', 1, 'BLOCK', this.host.blockMs, 'STREAMS', binding.stream, '$')));
    } catch (error) {
      await this.recover(error);
    } finally {
      this.reading = false;
    }
  }

  /** The bindings not paused: `this.bindings` itself when none is (no allocation per read), else a subset. */
  private unpausedBindings(): readonly StreamBinding[] {
    const { flow } = this.host;
    if (!this.bindings.some((binding) => flow.isPaused(binding))) return this.bindings;
    return this.bindings.filter((binding) => !flow.isPaused(binding));
  }

  /**
   * How many entries the limited binding's shared limits let this read take (binding-limits.ts).
   * None granted: `wait`, until a permit may be free (PERMIT_RETRY_MS, or sooner when one of ours
   * comes back) or the bucket has tokens again (the script says when); the loop then asks again.
   */
  private grantOutcome(limits: BindingLimits, grant: LimitsGrant): { granted: number; wait?: () => Promise<void> } {
    if (grant.short === 'permits') {
      const permits = limits.permits as GlobalPermits;
      return { granted: 0, wait: () => this.waitUntil(PERMIT_RETRY_MS, (wake) => permits.onNextRelease(wake)) };
    }
    if (grant.short === 'tokens') return { granted: 0, wait: () => this.waitUntil(grant.waitMs) };
    return { granted: grant.granted };
  }

  /**
   * How many permits this reader may ask for now (permits.ts `roomHere`): while they are scarce,
   * what its handlers can run; while they are plenty, what its reads may hold without the limit
   * (its prefetch slots), so its reads are as large as without the limit.
   */
  private permitRoom(binding: StreamBinding, limits: BindingLimits, wanted: number): number {
    return limits.permits?.roomHere(binding.concurrency, this.slotShare) ?? wanted;
  }

  /**
   * How many entries a re-read page of a rate-limited binding may take, of the `count` its slots
   * allow: no more than its handlers can start now (tokens count starts). A batch starts as one.
   */
  private wantedNow(binding: StreamBinding, limits: BindingLimits, count: number): number {
    if (limits.rate === undefined || binding.batch !== undefined) return count;
    return Math.min(count, this.host.lanes.startableNow(binding));
  }

  /**
   * Re-reads this consumer's own pending entries, page by page (id `0`, then after the last id
   * seen). Redis adds one to their delivery counts; XPENDING tells the new counts. A rate-limited
   * binding's page takes tokens first, as a fresh read does (they start like any read entry; a
   * worker restarted after kill -9 would start them on top of the bucket), by the same rules
   * (`reReadTokens`); no permits (docs/flow-control.md).
   */
  private async readOwnPending(): Promise<void> {
    // A paused group's pending entries wait too: recovery claims them back after the resume.
    const cursors = new Map<StreamBinding, string>(this.unpausedBindings().map((binding) => [binding, '0']));
    const rate = this.limited?.limits?.rate;
    while (!this.stopping && cursors.size > 0) {
      const pending = [...cursors.keys()];
      const { count, bytes } = await this.reserveSlots(pending.length);
      if (count === 0) return;
      const reserved = count * pending.length;
      let tokens = 0;
      if (rate !== undefined) {
        const grant = await this.reReadTokens(this.limited as StreamBinding, rate, count);
        if (grant.wait !== undefined) {
          // The slots go back before the wait, for the other readers and for claims.
          this.host.slots.unreserveRead(reserved, bytes);
          await grant.wait();
          continue;
        }
        tokens = grant.tokens;
      }
      let sent = false;
      let reply: unknown;
      try {
        if (tokens > 0) this.mustBeConnected();
        sent = true;
        reply = await this.inFlight.wrap(this.pulse.track(this.xreadgroup(
          'GROUP',
          this.group,
          this.host.consumer,
          'COUNT',
          tokens > 0 ? tokens : count,
          'STREAMS',
          ...pending.map((binding) => binding.stream),
          ...pending.map((binding) => cursors.get(binding) as string),
        )));
        this.failures = 0;
      } catch (error) {
        this.host.slots.unreserveRead(reserved, bytes);
        // Sent and unanswered, it may have run: its tokens are kept (returnGrant's keepTokens).
        if (!sent) refundTokens(rate, tokens);
        // After NOGROUP the group is new and its PEL empty: nothing of ours left to re-read.
        if (isNoGroupError(error)) cursors.clear();
        await this.recover(error);
        continue;
      }
      const reReadAt = Date.now();
      const pages: Array<[StreamBinding, ReadEntry[]]> = [];
      const answered = new Set<StreamBinding>();
      forEachStreamOfReply(reply, 2, (stream, entries) => {
        const binding = this.byStream.get(stream);
        if (binding === undefined || !cursors.has(binding)) return;
        answered.add(binding);
        if (entries.length === 0) cursors.delete(binding);
        else {
          cursors.set(binding, (entries[entries.length - 1] as ReadEntry).id);
          pages.push([binding, entries]);
        }
      });
      for (const binding of pending) if (!answered.has(binding)) cursors.delete(binding);
      refundTokens(rate, tokens - pages.reduce((read, [, entries]) => read + entries.length, 0));
      try {
        for (const [binding, entries] of pages) await deliverReRead(this.host, binding, entries, reReadAt);
      } finally {
        this.host.slots.unreserveRead(reserved, bytes);
      }
    }
  }

  /**
   * Tokens for one page of a rate-limited binding's re-read (≤ `count`), taken as readLimited takes
   * them: no more than its handlers can start now, once this connection is up. None: `wait` (for a
   * handler, for tokens, or a back-off after a failure), then the caller asks again.
   */
  private async reReadTokens(binding: StreamBinding, rate: SharedRateLimit, count: number): Promise<{ tokens: number; wait?: () => Promise<void> }> {
    const wanted = this.wantedNow(binding, binding.limits as BindingLimits, count);
    if (wanted === 0) return { tokens: 0, wait: () => this.untilAHandlerFinishes() };
    try {
      await this.untilConnected();
      const grant = await rate.take(wanted);
      if (grant.granted === 0) return { tokens: 0, wait: () => this.pulse.holding('limited', this.waitUntil(grant.waitMs)) };
      return { tokens: grant.granted };
    } catch (error) {
      return { tokens: 0, wait: () => this.recover(error) };
    }
  }

  /** Waits until one of the handlers returns (its slot may start a read entry), or stop(). */
  private untilAHandlerFinishes(): Promise<void> {
    return this.waitUntil(undefined, (wake) => void this.host.lanes.whenAHandlerFinishes().then(wake));
  }

  /**
   * A fresh read's entries (`>`): first deliveries, so none is past `maxDeliveries` and none needs
   * the check. They take their slots as the reply holds them, and the lanes start their handlers.
   */
  private admitFresh(binding: StreamBinding, entries: readonly ReplyEntry[], tokensTakenAt?: number): number {
    const { host } = this;
    host.telemetry?.consumed(binding.stream, binding.group, entries.length);
    const admitted = host.slots.admitFresh(binding, entries);
    const { queue } = binding;
    // The entries just queued hold the permits this read took, each until its slot is released.
    if (binding.limits?.permits !== undefined) {
      for (let i = queue.length - admitted; i < queue.length; i++) (queue[i] as InFlightEntry).permit = true;
    }
    // Taken before the lanes start some of them (a started entry may leave the queue).
    const first = admitted > 0 && tokensTakenAt !== undefined ? queue[queue.length - admitted] : undefined;
    const last = queue[queue.length - 1];
    host.lanes.queued(binding, admitted);
    if (first !== undefined) this.lateStarts?.read(first, last as InFlightEntry, tokensTakenAt as number);
    return admitted;
  }

  /** Whether this reader's connection is up now: a command sent now runs now, not after a reconnect. */
  private connected(): boolean {
    return !(this.client instanceof Redis) || this.client.status === 'ready';
  }

  /** Waits until this reader's connection is up (a PING waits in ioredis' queue for the reconnect, or connects it). */
  private async untilConnected(): Promise<void> {
    if (!this.connected()) await this.inFlight.wrap(this.client.call('PING'));
  }

  private mustBeConnected(): void {
    if (!this.connected()) throw new Error(`the reader's connection of group "${this.group}" dropped between the grant and the read`);
  }

  private xreadgroup(...args: (string | number)[]): Promise<unknown> {
    return this.readsBytes ? this.client.callBuffer('XREADGROUP', ...args) : this.client.call('XREADGROUP', ...args);
  }

  private async recover(error: unknown): Promise<void> {
    if (this.stopping) return;
    if (isNoGroupError(error)) {
      this.host.logger.warn(`group "${this.group}" or one of its streams is gone (${errorMessage(error)}); recreating it at 0`);
      try {
        await this.host.recreateGroups(this.bindings);
        return;
      } catch (recreateError) {
        error = recreateError;
      }
    }
    const delay = Math.min(this.host.reconnectMaxMs, this.host.reconnectInitialMs * 2 ** Math.min(this.failures, 20));
    if (this.failures === 0) {
      this.host.logger.warn(`read of group "${this.group}" failed (${errorMessage(error)}); retrying with backoff`);
    }
    this.failures++;
    await this.sleep(delay / 2 + Math.random() * (delay / 2));
  }

  private async fetchClientId(): Promise<void> {
    try {
      this.clientId = Number(await this.inFlight.wrap(this.client.call('CLIENT', 'ID')));
    } catch {
      this.clientId = undefined;
    }
  }

  /**
   * Whether a blocked read of this reader can be made to return now (CLIENT UNBLOCK over the command
   * connection): on one Redis, not on a Cluster, where the read's node and its client id are
   * known only to ioredis' slot map (ids are per node: an UNBLOCK sent to the wrong node after a
   * failover or a MOVED would end another client's read). There a read returns after its `blockMs`.
   */
  get canUnblock(): boolean {
    return this.host.commands instanceof Redis;
  }

  private async unblock(): Promise<void> {
    const { commands } = this.host;
    if (this.clientId === undefined || !this.canUnblock || commands.status !== 'ready') return;
    try {
      await (commands as Redis).call('CLIENT', 'UNBLOCK', this.clientId);
    } catch {
      // stop() falls back to dropping the connection
    }
  }

  private sleep(ms: number): Promise<void> {
    return this.waitUntil(ms);
  }

  /**
   * Waits `ms` (`undefined`: no timer) or until `early` wakes it, whichever is first; stop() ends
   * it at once. `early` subscribes and may return its unsubscribe, called when the wait ends: a
   * wait must leave nothing behind on what it waited for.
   */
  private waitUntil(ms: number | undefined, early?: (wake: () => void) => (() => unknown) | void): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      let detach: (() => unknown) | void;
      const done = (): void => {
        if (this.wakeSleep !== done) return;
        if (this.sleepTimer !== undefined) clearTimeout(this.sleepTimer);
        this.sleepTimer = undefined;
        this.wakeSleep = undefined;
        detach?.();
        resolve();
      };
      this.wakeSleep = done;
      if (ms !== undefined) this.sleepTimer = setTimeout(done, ms);
      detach = early?.(done);
    });
  }

  private cancelSleep(): void {
    if (this.sleepTimer !== undefined) clearTimeout(this.sleepTimer);
    this.sleepTimer = undefined;
    this.wakeSleep?.();
    this.wakeSleep = undefined;
  }
}

function afterPendingMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
