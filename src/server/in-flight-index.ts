import type { StreamBinding } from './handler-binding.js';
import type { InFlightEntry } from './in-flight.js';

/**
 * The entries a dispatcher holds, by binding and id (the twin check of every admission).
 *
 * The id maps point to slot numbers, not to entries. A long-lived Map that sees a set and a delete
 * per entry replaces its hash table every few hundred entries; the new table is allocated in the
 * old generation, and the table it replaces keeps what it held until the next full GC. Holding
 * entries, it kept each entry (its fields, the strings of its read reply) alive through the
 * young-generation GCs that followed; holding slot numbers, it keeps only the ids. The slots array
 * lets go of an entry the moment it is removed. (docs/benchmarks.md, "GC survivors")
 */
export class InFlightIndex {
  private readonly ids = new Map<StreamBinding, Map<string, number>>();
  private readonly slots: (InFlightEntry | undefined)[] = [];
  /** Slots given back, reused before the array grows (it grows to the most entries held at once). */
  private readonly freeSlots: number[] = [];

  constructor(bindings: readonly StreamBinding[]) {
    for (const binding of bindings) this.ids.set(binding, new Map());
  }

  /** The id map of one binding, for a run of lookups and adds (`get` / `add` take it back). */
  idsOf(binding: StreamBinding): Map<string, number> {
    return this.ids.get(binding) as Map<string, number>;
  }

  get(ids: Map<string, number>, id: string): InFlightEntry | undefined {
    const slot = ids.get(id);
    return slot === undefined ? undefined : this.slots[slot];
  }

  has(binding: StreamBinding, id: string): boolean {
    return this.ids.get(binding)?.has(id) ?? false;
  }

  add(ids: Map<string, number>, entry: InFlightEntry): void {
    const slot = this.freeSlots.length > 0 ? (this.freeSlots.pop() as number) : this.slots.length;
    this.slots[slot] = entry;
    entry.indexSlot = slot;
    ids.set(entry.id, slot);
  }

  remove(entry: InFlightEntry): void {
    (this.ids.get(entry.binding) as Map<string, number>).delete(entry.id);
    this.slots[entry.indexSlot] = undefined;
    this.freeSlots.push(entry.indexSlot);
    entry.indexSlot = -1;
  }

  /** The binding's entries, in the order they were added. */
  *entriesOf(binding: StreamBinding): Generator<InFlightEntry> {
    for (const slot of this.ids.get(binding)?.values() ?? []) {
      const entry = this.slots[slot];
      if (entry !== undefined) yield entry;
    }
  }
}
