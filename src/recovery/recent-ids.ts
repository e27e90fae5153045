/**
 * A bounded memory of stream entry ids already handled one way (reported lost, reported too large
 * to dead-letter), so two paths of one process that find the same id report it once. Keeps the
 * most recent `capacity` ids; an older one forgotten is at worst reported again.
 */
export class RecentIds {
  private readonly seen = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** Remembers the ids of `stream` + `group` not seen before, and returns them. */
  addNew(stream: string, group: string, ids: readonly string[]): string[] {
    const fresh: string[] = [];
    for (const id of ids) {
      const key = `${stream}\u0000${group}\u0000${id}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      fresh.push(id);
      if (this.seen.size > this.capacity) this.seen.delete(this.seen.values().next().value as string);
    }
    return fresh;
  }

  /** Forgets ids (their handling failed: the next finder reports them). */
  forget(stream: string, group: string, ids: readonly string[]): void {
    for (const id of ids) this.seen.delete(`${stream}\u0000${group}\u0000${id}`);
  }
}
