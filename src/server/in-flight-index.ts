import { compareStreamIds } from '../stream-ids.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';

/**
 * The entries the prefetch slots hold, for the twin check of every admission (the same binding and id
 * held already) and for the rare questions of recovery (is this id held? which ids are?).
 *
 * No map keyed by id: a long-lived Map that sees a set and a delete per entry replaces its hash
 * table every few hundred entries, in the old generation, and a replaced table keeps what it held
 * alive through the young-generation GCs until the next full one; and hashing every id read was a
 * good part of the per-entry cost (docs/benchmarks.md, "GC survivors"). Instead:
 * - the entries sit in a slots array (a removed entry's slot is cleared at once and reused);
 * - a fresh read (`>`) needs no lookup while its first id is above the highest id this binding
 *   ever admitted: Redis hands a group's entries out in id order, so such an id was never
 *   delivered to the group before. Only a group reset (recreated at 0, SETID) or a claim or
 *   re-read (`admit`) looks the ids up, in a map built for that one admission.
 */
export class InFlightIndex {
  private readonly slots: (InFlightEntry | undefined)[] = [];
  /** Slots given back, reused before the array grows (it grows to the most entries held at once). */
  private readonly freeSlots: number[] = [];
  /** Per binding: the highest id it admitted from any source (updated in place: no churn). */
  private readonly highest = new Map<StreamBinding, string>();
  /** `heldById` of one binding, kept by `has` for a run of questions (recovery asks per pending row); dropped by any add or remove. */
  private lookup: { binding: StreamBinding; held: Map<string, InFlightEntry> } | undefined;

  /** Whether the binding may hold an entry with an id at or above `id` (else none of a fresh read's ids from `id` up is held). */
  mayHoldFrom(binding: StreamBinding, id: string): boolean {
    const highest = this.highest.get(binding);
    return highest !== undefined && compareStreamIds(id, highest) <= 0;
  }

  /** The binding's entries by id, built now: for the lookups of one admission. */
  heldById(binding: StreamBinding): Map<string, InFlightEntry> {
    const held = new Map<string, InFlightEntry>();
    for (const entry of this.entriesOf(binding)) held.set(entry.id, entry);
    return held;
  }

  has(binding: StreamBinding, id: string): boolean {
    if (this.lookup === undefined || this.lookup.binding !== binding) this.lookup = { binding, held: this.heldById(binding) };
    return this.lookup.held.has(id);
  }

  /** Holds `entry`; the caller reports its id to `admitted` (once per admission: the highest of them). */
  add(entry: InFlightEntry): void {
    const slot = this.freeSlots.length > 0 ? (this.freeSlots.pop() as number) : this.slots.length;
    this.slots[slot] = entry;
    entry.indexSlot = slot;
    this.dropLookup();
  }

  /** The binding admitted an entry with this id: it counts for `mayHoldFrom` from now on. */
  admitted(binding: StreamBinding, id: string): void {
    const highest = this.highest.get(binding);
    if (highest === undefined || compareStreamIds(id, highest) > 0) this.highest.set(binding, id);
  }

  remove(entry: InFlightEntry): void {
    this.slots[entry.indexSlot] = undefined;
    this.freeSlots.push(entry.indexSlot);
    entry.indexSlot = -1;
    this.dropLookup();
  }

  /** The held entries changed: a lookup built before is stale. */
  private dropLookup(): void {
    if (this.lookup !== undefined) this.lookup = undefined;
  }

  /** The binding's entries, in no particular order. */
  *entriesOf(binding: StreamBinding): Generator<InFlightEntry> {
    for (const entry of this.slots) if (entry !== undefined && entry.binding === binding) yield entry;
  }
}
