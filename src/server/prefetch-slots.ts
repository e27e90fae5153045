import { ByteBudget } from './byte-budget.js';
import { ClaimWaiters } from './claim-waiters.js';
import { InFlightEntry, type IncomingEntry, type StreamBinding } from './in-flight.js';
import { InFlightIndex } from './in-flight-index.js';
import type { ReplyEntry } from './read-reply.js';

export { FIRST_READ_ENTRY_BYTES } from './byte-budget.js';

/**
 * Prefetch accounting. Every fetched entry (a fresh read through `admitFresh`, a re-read, claim or
 * redelivery through `admit`) holds one prefetch slot and its bytes (byte-budget.ts) until
 * `release` (acked, nacked, failed, handed back), and joins its binding's queue; the caller then
 * tells the handler lanes (handler-lanes.ts), which start it. Readers reserve slots (and the bytes
 * they expect) before a read so several readers (one per group) never fetch more than `prefetch`
 * entries, nor more than `maxBytes` at the estimated entry size, together.
 */
export class PrefetchSlots {
  /** The entries held, of every binding (in-flight-index.ts): the twin check of every admission. */
  private readonly inFlight: InFlightIndex;
  private inFlightTotal = 0;
  /** Entries whose ack was requested and whose slot is not free yet: it comes back within a round trip. */
  private returning = 0;
  private reserved = 0;
  private accepting = true;
  private slotWaiters: Array<() => void> = [];
  /** Claims waiting for slots (served before readers, which only see slots beyond their demand). */
  private readonly claims = new ClaimWaiters();
  private readonly bytes: ByteBudget;

  constructor(
    private readonly prefetch: number,
    maxBytes = Number.POSITIVE_INFINITY,
    /** A delivery that arrived while its twin's ack was under way, handed on once that ack is done (rare). */
    private readonly redelivered: (binding: StreamBinding, incoming: IncomingEntry) => void = () => undefined,
  ) {
    this.inFlight = new InFlightIndex();
    this.bytes = new ByteBudget(maxBytes);
  }

  get prefetchSize(): number {
    return this.prefetch;
  }

  get maxPrefetchBytes(): number {
    return this.bytes.maxBytes;
  }

  /** Bytes held now and the most held at once since the start (for tests and sizing). */
  bytesHeld(): { held: number; peak: number } {
    return this.bytes.bytesHeld();
  }

  /** Entries one read may fetch within the byte cap at the estimated entry size (`ByteBudget.entriesWithinCap`). */
  entriesWithinByteCap(): number {
    return this.bytes.entriesWithinCap();
  }

  /** Entries in half the byte cap at the estimated size: a read this large is worth waiting for. */
  entriesInHalfByteCap(): number {
    return this.bytes.entriesInHalfCap();
  }

  /** No entry held, no read nor claim in progress: a read may fetch one entry whatever its size. */
  holdsNothing(): boolean {
    return this.inFlightTotal === 0 && this.reserved === 0 && this.bytes.noneReserved();
  }

  /** Reserves `slots` for a read and the bytes they are expected to take; returns those bytes (for `unreserveRead`). */
  reserveRead(slots: number): number {
    this.reserved += slots;
    return this.bytes.reserve(slots);
  }

  unreserveRead(slots: number, bytes: number): void {
    this.bytes.unreserve(bytes);
    this.unreserve(slots);
  }

  /** False once stopAccepting() was called (closing). */
  get isAccepting(): boolean {
    return this.accepting;
  }

  /** Prefetch slots neither held by an entry nor reserved by a read in progress. */
  freeSlots(): number {
    return this.prefetch - this.inFlightTotal - this.reserved;
  }

  /** Slots reserved by reads (and claims) in progress. */
  reservedCount(): number {
    return this.reserved;
  }

  /** Free slots a reader may take: what is free beyond the slots claims are waiting for. */
  freeSlotsForReads(): number {
    return this.freeSlots() - this.claims.demand;
  }

  /** Reserves up to `max` free slots at once; returns how many. */
  reserveNow(max: number): number {
    const count = Math.max(0, Math.min(max, this.freeSlots()));
    this.reserved += count;
    return count;
  }

  /**
   * Waits until up to `wanted` slots can be reserved for a claim (served before any reader).
   * Resolves with the slots reserved, possibly fewer than wanted, as soon as any were; `cancel`
   * resolves it with 0.
   */
  reserveLater(wanted: number): { reserved: Promise<number>; cancel: () => void } {
    return this.claims.add(wanted);
  }

  /**
   * The entry's ack is queued or in flight: its slot comes back within a round trip. Counted here,
   * and uncounted by the same `release` that frees the slot and wakes the readers, so a reader
   * never sees a freed slot still "returning" (whatever the ack batcher's own bookkeeping does).
   */
  markReturning(entry: InFlightEntry): void {
    if (entry.returning || !entry.held) return;
    entry.returning = true;
    this.returning++;
  }

  /** Slots are on their way back: acks are queued or in flight. */
  slotsReturning(): boolean {
    return this.returning > 0;
  }

  inFlightCount(): number {
    return this.inFlightTotal;
  }

  reserve(count: number): void {
    this.reserved += count;
  }

  unreserve(count: number): void {
    this.reserved -= count;
    if (count > 0) this.wakeSlotWaiters();
  }

  /**
   * Ids of the entries this binding still works on: queued, running, or waiting for a manual ack;
   * not those whose ack, nack or handoff is already under way (settled).
   */
  unsettledIdsOf(binding: StreamBinding): string[] {
    const ids: string[] = [];
    for (const entry of this.inFlight.entriesOf(binding)) if (!entry.settled) ids.push(entry.id);
    return ids;
  }

  has(binding: StreamBinding, id: string): boolean {
    return this.inFlight.has(binding, id);
  }

  /** Resolves when `wanted` slots may be free (or the slots stop accepting); callers re-check. */
  waitForSlot(wanted = 1): Promise<void> {
    if (!this.accepting || this.freeSlotsForReads() >= wanted) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  /** Resolves on the next release of a slot (or on stop). */
  waitForChange(): Promise<void> {
    if (!this.accepting) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  /**
   * Registers entries of one binding and queues them on it; returns how many were new. An entry
   * already in flight (same stream, group, id) is skipped: it is the same delivery, already being
   * handled; unless its ack is under way, then the new delivery is kept aside until that ack is done.
   */
  admit(binding: StreamBinding, entries: readonly IncomingEntry[]): number {
    // Claims, re-reads and redeliveries: ids in any order, any of them possibly held.
    const held = this.inFlight.heldById(binding);
    let bytes = 0;
    let admitted = 0;
    for (const incoming of entries) {
      const twin = held.get(incoming.id);
      if (twin !== undefined) {
        if (twin.returning) twin.redelivery = incoming;
        continue;
      }
      const entry = new InFlightEntry(binding, incoming.id, incoming.deliveryCount, incoming.flat, incoming.fields);
      entry.held = true;
      this.inFlight.add(entry);
      this.inFlight.admitted(binding, entry.id);
      held.set(entry.id, entry);
      bytes += entry.size;
      admitted++;
      binding.queue.push(entry);
    }
    this.hold(bytes, admitted);
    return admitted;
  }

  /** `admitted` entries of `bytes` joined their binding's queue: they hold their slots from now. */
  private hold(bytes: number, admitted: number): void {
    if (admitted === 0) return;
    this.inFlightTotal += admitted;
    this.bytes.hold(bytes, admitted);
  }

  /**
   * `admit` of a fresh read's entries (delivery count 1) as the reply holds them: no object per
   * entry besides its `InFlightEntry`. An entry without fields (deleted while pending: own-PEL
   * re-reads only, never a fresh read) is skipped. Returns how many were new.
   */
  admitFresh(binding: StreamBinding, entries: readonly ReplyEntry[]): number {
    // A read's ids ascend. Above every id this binding admitted, none can be held: no lookups
    // (in-flight-index.ts). At or below it (the group was reset), each id is looked up.
    const first = entries[0];
    const held = first !== undefined && this.inFlight.mayHoldFrom(binding, idOf(first)) ? this.inFlight.heldById(binding) : undefined;
    let bytes = 0;
    let admitted = 0;
    let last: string | undefined;
    for (let i = 0; i < entries.length; i++) {
      const item = entries[i] as ReplyEntry;
      const flat = item[1];
      if (flat === null) continue;
      const id = idOf(item);
      if (held !== undefined) {
        const twin = held.get(id);
        if (twin !== undefined) {
          if (twin.returning) twin.redelivery = { id, flat, deliveryCount: 1 };
          continue;
        }
      }
      const entry = new InFlightEntry(binding, id, 1, flat);
      entry.held = true;
      this.inFlight.add(entry);
      held?.set(id, entry);
      last = id;
      bytes += entry.size;
      admitted++;
      binding.queue.push(entry);
    }
    if (last !== undefined) this.inFlight.admitted(binding, last);
    this.hold(bytes, admitted);
    return admitted;
  }

  /** The entry left this consumer's hands (acked, nacked, failed, handed back): its prefetch slot is free. */
  release(entry: InFlightEntry): void {
    if (!this.drop(entry)) return;
    this.wakeSlotWaiters();
    if (entry.redelivery !== undefined) this.redelivered(entry.binding, entry.redelivery);
  }

  /** `release` of many entries (one XACK's): the readers and claims are woken once, not per entry. */
  releaseAll(entries: readonly InFlightEntry[]): void {
    let redelivered: InFlightEntry[] | undefined;
    let freed = 0;
    for (const entry of entries) {
      if (!this.drop(entry)) continue;
      freed++;
      if (entry.redelivery !== undefined) (redelivered ??= []).push(entry);
    }
    if (freed > 0) this.wakeSlotWaiters();
    if (redelivered !== undefined) for (const entry of redelivered) this.redelivered(entry.binding, entry.redelivery as IncomingEntry);
  }

  /** Frees the entry's slot and bytes, once (the `held` flag: a second release of it is a no-op). */
  private drop(entry: InFlightEntry): boolean {
    if (!entry.held) return false;
    entry.held = false;
    if (entry.permit) {
      entry.permit = false;
      entry.binding.limits?.permits?.release(1);
    }
    this.inFlight.remove(entry);
    this.inFlightTotal--;
    this.bytes.free(entry.size);
    if (entry.returning) {
      entry.returning = false;
      this.returning--;
    }
    return true;
  }

  /** Closing: slot waiters wake so readers can see they must stop; waiting claims get nothing. */
  stopAccepting(): void {
    this.accepting = false;
    this.claims.cancelAll();
    this.wakeSlotWaiters(true);
  }

  private readonly freeSlotsNow = (): number => this.freeSlots();
  private readonly reserveNowFor = (wanted: number): number => this.reserveNow(wanted);

  /** Freed slots go to waiting claims first (reserved synchronously, so no reader can take them in between), then readers wake. */
  private wakeSlotWaiters(force = false): void {
    this.claims.serve(this.freeSlotsNow, this.reserveNowFor);
    if (this.slotWaiters.length === 0 || (!force && this.freeSlotsForReads() <= 0)) return;
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const wake of waiters) wake();
  }
}

function idOf(item: ReplyEntry): string {
  return typeof item[0] === 'string' ? item[0] : String(item[0]);
}
