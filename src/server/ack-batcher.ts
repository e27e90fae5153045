import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { ackAndDelete, xackdelMissedGroup } from './ack-delete.js';
import type { IdempotencyRecords } from './idempotency.js';
import type { AckDeletePolicy } from './ack-policy.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';
import { TickBatches } from './tick-batches.js';

interface AckBatch {
  readonly entries: InFlightEntry[];
  /** Their ids, collected as they are added (the XACK's arguments). */
  readonly ids: string[];
  /** Settles with this batch's XACK: resolves when Redis acked, rejects when the XACK failed. */
  readonly done: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * Collects acks and sends one XACK per stream + group at the end of the tick (tick-batches.ts:
 * the handlers that finish together are acked together), so a busy consumer pays one round trip
 * per batch, not per entry. The XACKs of a tick share one socket write (batchThisTick); a
 * request's XACK comes after its reply was answered, so it is not in the reply's write.
 * An entry keeps its prefetch slot until its XACK was answered: the consumer's pending count
 * in Redis never exceeds `prefetch`. A failed XACK is reported (`report`) and rejects the acks of
 * its batch; those entries stay pending in Redis and their slots are released all the same.
 * In work-queue mode (`deletePolicy` gives a policy) the batch is one XACKDEL instead, which deletes
 * the entries too; a group found missing is recreated (`recreateGroup`) and the batch reported.
 */
export class AckBatcher {
  private readonly batches = new TickBatches<StreamBinding, AckBatch>(newBatch, (binding, batch) => this.send(binding, batch));

  constructor(
    private readonly client: RedisClient,
    /** Frees the slots of one XACK's entries, once it was answered (or failed). */
    private readonly releaseAll: (entries: readonly InFlightEntry[]) => void,
    private readonly report: (error: Error) => void,
    private readonly maxBatch = 1_000,
    private readonly deletePolicy: (binding: StreamBinding) => AckDeletePolicy | undefined = () => undefined,
    private readonly recreateGroup: (binding: StreamBinding) => Promise<void> = async () => undefined,
    /** Idempotent handlers: their processed keys are recorded in the acknowledgement's script call. */
    private readonly records?: IdempotencyRecords,
  ) {}

  /**
   * Queues an ack; the returned promise resolves when the batch holding it was acked and rejects
   * when its XACK failed (already reported: the promise is marked handled, so an ack nobody awaits
   * is no unhandled rejection).
   */
  add(entry: InFlightEntry): Promise<void> {
    const batch = this.batches.of(entry.binding);
    batch.entries.push(entry);
    batch.ids.push(entry.id);
    return this.queued(batch);
  }

  /**
   * `add` of entries of one binding (a batch handler's): one promise for all of them. They join one
   * XACK, which may exceed `maxBatch` by at most their number.
   */
  addAll(binding: StreamBinding, entries: readonly InFlightEntry[]): Promise<void> {
    const batch = this.batches.of(binding);
    for (const entry of entries) {
      batch.entries.push(entry);
      batch.ids.push(entry.id);
    }
    return this.queued(batch);
  }

  private queued(batch: AckBatch): Promise<void> {
    if (batch.entries.length >= this.maxBatch) this.batches.flushNow();
    return batch.done;
  }

  /** Sends what is queued and waits for every flush in progress. */
  drain(): Promise<void> {
    return this.batches.drain();
  }

  private async send(binding: StreamBinding, batch: AckBatch): Promise<void> {
    const { entries, ids } = batch;
    let failure: Error | undefined;
    const policy = this.deletePolicy(binding);
    try {
      const recordKeys = this.records?.recordKeysOf(binding, entries);
      if (recordKeys !== undefined) {
        const replies = await (this.records as IdempotencyRecords).ackAndRecord(binding, ids, recordKeys, policy ?? '');
        if (policy !== undefined && (await xackdelMissedGroup(this.client, binding.stream, binding.group, replies))) {
          await this.recreateGroup(binding);
          throw new Error('the group was missing (XACKDEL answered -1); it was recreated at 0 and the entries will be delivered again');
        }
      } else if (policy === undefined) {
        batchThisTick(this.client);
        await this.client.xack(binding.stream, binding.group, ...ids);
      } else if ((await ackAndDelete(this.client, binding.stream, binding.group, policy, ids)).groupMissing) {
        // What NOGROUP is to XACK: the group is gone. Recreated at 0, the entries come back (a duplicate, never a loss).
        await this.recreateGroup(binding);
        throw new Error('the group was missing (XACKDEL answered -1); it was recreated at 0 and the entries will be delivered again');
      }
    } catch (error) {
      // The entries stay pending in Redis and come back through the PEL re-read or recovery.
      failure = new Error(
        `${policy === undefined ? 'XACK' : 'XACKDEL'} of ${ids.length} entries on "${binding.stream}" (group "${binding.group}") failed; they stay pending: ${(error as Error).message}`,
      );
      this.report(failure);
    }
    this.releaseAll(entries);
    if (failure === undefined) batch.resolve();
    else batch.reject(failure);
  }
}

function newBatch(): AckBatch {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => undefined);
  return { entries: [], ids: [], done, resolve, reject };
}
