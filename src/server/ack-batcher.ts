import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { StreamBinding } from './handler-binding.js';
import type { InFlightEntry } from './in-flight.js';

interface AckBatch {
  readonly binding: StreamBinding;
  readonly entries: InFlightEntry[];
  /** Settles with this batch's XACK: resolves when Redis acked, rejects when the XACK failed. */
  readonly done: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * Collects acks and sends one XACK per stream + group at the end of the tick (`process.nextTick`:
 * the handlers that finish together are acked together), so a busy consumer pays one round trip
 * per batch, not per entry. The XACKs of a tick share one socket write (batchThisTick); a
 * request's XACK comes after its reply was answered, so it is not in the reply's write.
 * An entry keeps its prefetch slot until its XACK was answered: the consumer's pending count
 * in Redis never exceeds `prefetch`. A failed XACK is reported (`report`) and rejects the acks of
 * its batch; those entries stay pending in Redis and their slots are released all the same.
 */
export class AckBatcher {
  private batches = new Map<StreamBinding, AckBatch>();
  private scheduled = false;
  private flushes = new Set<Promise<void>>();

  constructor(
    private readonly client: RedisClient,
    private readonly release: (entry: InFlightEntry) => void,
    private readonly report: (error: Error) => void,
    private readonly maxBatch = 1_000,
  ) {}

  /**
   * Queues an ack; the returned promise resolves when the batch holding it was acked and rejects
   * when its XACK failed (already reported: the promise is marked handled, so an ack nobody awaits
   * is no unhandled rejection).
   */
  add(entry: InFlightEntry): Promise<void> {
    let batch = this.batches.get(entry.binding);
    if (batch === undefined) {
      batch = newBatch(entry.binding);
      this.batches.set(entry.binding, batch);
    }
    batch.entries.push(entry);
    if (batch.entries.length >= this.maxBatch) this.flushNow();
    else if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushScheduled);
    }
    return batch.done;
  }

  /** Sends what is queued and waits for every flush in progress. */
  async drain(): Promise<void> {
    this.flushNow();
    while (this.flushes.size > 0) await Promise.all(this.flushes);
  }

  private readonly flushScheduled = (): void => {
    if (this.scheduled) this.flushNow();
  };

  private flushNow(): void {
    this.scheduled = false;
    if (this.batches.size === 0) return;
    const batches = [...this.batches.values()];
    this.batches = new Map();
    const flush = Promise.all(batches.map((batch) => this.send(batch))).then(() => {
      this.flushes.delete(flush);
    });
    this.flushes.add(flush);
  }

  private async send(batch: AckBatch): Promise<void> {
    const { binding, entries } = batch;
    const ids = entries.map((entry) => entry.id);
    let failure: Error | undefined;
    try {
      batchThisTick(this.client);
      await this.client.xack(binding.stream, binding.group, ...ids);
    } catch (error) {
      // The entries stay pending in Redis and come back through the PEL re-read or recovery.
      failure = new Error(
        `XACK of ${ids.length} entries on "${binding.stream}" (group "${binding.group}") failed; they stay pending: ${(error as Error).message}`,
      );
      this.report(failure);
    }
    for (const entry of entries) this.release(entry);
    if (failure === undefined) batch.resolve();
    else batch.reject(failure);
  }
}

function newBatch(binding: StreamBinding): AckBatch {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => undefined);
  return { binding, entries: [], done, resolve, reject };
}
