/**
 * Work collected per key (a stream + group binding) during one tick and sent at its end
 * (`process.nextTick`): what finishes together goes out together, one command per key. Used by
 * the ack batcher and the retry releaser. The map lives as long as its owner: a batch leaves it
 * by delete, never by clear() or a new map, either of which leaves a table in the old generation
 * holding the last batches, so every entry they name outlives young-generation GCs
 * (docs/benchmarks.md, "GC survivors").
 */
export class TickBatches<Key, Batch> {
  private readonly batches = new Map<Key, Batch>();
  private scheduled = false;
  private readonly flushes = new Set<Promise<void>>();

  constructor(
    private readonly create: (key: Key) => Batch,
    /** Sends one key's batch; reports its own failures (a rejection is not caught here). */
    private readonly send: (key: Key, batch: Batch) => Promise<void>,
  ) {}

  /** The batch of `key` in this tick, created on first use; the flush at the tick's end is scheduled. */
  of(key: Key): Batch {
    let batch = this.batches.get(key);
    if (batch === undefined) {
      batch = this.create(key);
      this.batches.set(key, batch);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushScheduled);
    }
    return batch;
  }

  /** Sends every batch now (a batch reached its size cap, or a drain). */
  flushNow(): void {
    this.scheduled = false;
    if (this.batches.size === 0) return;
    const sending = [...this.batches];
    for (const [key] of sending) this.batches.delete(key);
    const flush = Promise.all(sending.map(([key, batch]) => this.send(key, batch))).then(() => {
      this.flushes.delete(flush);
    });
    this.flushes.add(flush);
  }

  /** Sends what is queued and waits for every flush in progress (close()). */
  async drain(): Promise<void> {
    this.flushNow();
    while (this.flushes.size > 0) await Promise.all(this.flushes);
  }

  private readonly flushScheduled = (): void => {
    if (this.scheduled) this.flushNow();
  };
}
