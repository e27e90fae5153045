import type { Logger } from '@nestjs/common';
import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { StreamBinding } from './handler-binding.js';
import type { InFlightEntry } from './in-flight.js';

interface AckBatch {
  readonly binding: StreamBinding;
  readonly entries: InFlightEntry[];
}

/**
 * Collects acks and sends one XACK per stream + group at the end of the tick (`process.nextTick`:
 * the handlers that finish together are acked together), so a busy consumer pays one round trip
 * per batch, not per entry. The XACKs of a tick share one socket write (batchThisTick); a
 * request's XACK comes after its reply was answered, so it is not in the reply's write.
 * An entry keeps its prefetch slot until its XACK was answered: the consumer's pending count
 * in Redis never exceeds `prefetch`.
 */
export class AckBatcher {
  private batches = new Map<StreamBinding, AckBatch>();
  private scheduled = false;
  private flushes = new Set<Promise<void>>();
  private nextFlush: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly release: (entry: InFlightEntry) => void,
    private readonly logger: Logger,
    private readonly maxBatch = 1_000,
  ) {}

  /** Queues an ack; the returned promise settles when the batch holding it was answered. */
  add(entry: InFlightEntry): Promise<void> {
    let batch = this.batches.get(entry.binding);
    if (batch === undefined) {
      batch = { binding: entry.binding, entries: [] };
      this.batches.set(entry.binding, batch);
    }
    batch.entries.push(entry);
    const flush = this.nextFlush ?? this.createNextFlush();
    if (batch.entries.length >= this.maxBatch) this.flushNow();
    else if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flushScheduled);
    }
    return flush.promise;
  }

  /** Sends what is queued and waits for every flush in progress. */
  async drain(): Promise<void> {
    this.flushNow();
    while (this.flushes.size > 0) await Promise.all(this.flushes);
  }

  private createNextFlush(): { promise: Promise<void>; resolve: () => void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.nextFlush = { promise, resolve };
    return this.nextFlush;
  }

  private readonly flushScheduled = (): void => {
    if (this.scheduled) this.flushNow();
  };

  private flushNow(): void {
    this.scheduled = false;
    if (this.batches.size === 0) return;
    const batches = [...this.batches.values()];
    const done = this.nextFlush;
    this.batches = new Map();
    this.nextFlush = undefined;
    const flush = this.send(batches).finally(() => {
      this.flushes.delete(flush);
      done?.resolve();
    });
    this.flushes.add(flush);
  }

  private async send(batches: AckBatch[]): Promise<void> {
    await Promise.all(
      batches.map(async ({ binding, entries }) => {
        const ids = entries.map((entry) => entry.id);
        try {
          batchThisTick(this.client);
          await this.client.xack(binding.stream, binding.group, ...ids);
        } catch (error) {
          // The entries stay pending in Redis and come back through the PEL re-read or recovery.
          this.logger.error(
            `XACK of ${ids.length} entries on "${binding.stream}" (group "${binding.group}") failed: ${(error as Error).message}`,
          );
        } finally {
          for (const entry of entries) this.release(entry);
        }
      }),
    );
  }
}
