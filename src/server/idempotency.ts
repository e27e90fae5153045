import type { RedisClient } from '../redis/connection.js';
import { companionKey } from '../redis/keys.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { serverScripts } from './scripts/loader.js';
import type { RedisStreamsContext } from './context.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';

/** The key under which a processed entry of `stream` is recorded for `group`: in the stream's hash slot. */
export function idempotencyRecordKey(stream: string, group: string, key: string): string {
  return companionKey(stream, `done:${group}:${key}`);
}

/**
 * Consumer-side idempotency (`extras.idempotency`): before a handler runs, its entry's key is
 * looked up; a recorded key means the entry was processed already (a redelivery, a group reset to
 * 0, a producer's duplicate with the same payload key), so it is acknowledged without running the
 * handler. After success the key is recorded in the same script call as the acknowledgement.
 */
export class IdempotencyRecords {
  /** The record key of each entry checked, until its acknowledgement writes it. */
  private readonly keys = new WeakMap<InFlightEntry, string>();

  constructor(private readonly client: RedisClient) {}

  /** Whether the entry's key is recorded (processed already). Remembers the key for the acknowledgement. */
  async processed(entry: InFlightEntry, payload: unknown, context: RedisStreamsContext): Promise<boolean> {
    const { binding } = entry;
    const idempotency = binding.idempotency;
    if (idempotency === undefined) return false;
    const key = idempotency.key === undefined ? entry.id : idempotency.key(payload, context);
    if (typeof key !== 'string' || key === '') {
      throw new Error(`extras.idempotency.key of "${binding.pattern}" must return a non-empty string, got ${typeof key}`);
    }
    const recordKey = idempotencyRecordKey(binding.stream, binding.group, key);
    this.keys.set(entry, recordKey);
    batchThisTick(this.client);
    return (await this.client.exists(recordKey)) === 1;
  }

  /** Record keys of a batch to write with its acknowledgement, or `undefined` when the binding records none. */
  recordKeysOf(binding: StreamBinding, entries: readonly InFlightEntry[]): string[] | undefined {
    if (binding.idempotency === undefined) return undefined;
    // An entry acked without a check (the check failed to run) is recorded under its id.
    return entries.map((entry) => this.keys.get(entry) ?? idempotencyRecordKey(binding.stream, binding.group, entry.id));
  }

  /** XACK (or XACKDEL with `policy`) of `ids` and SET … PX of their record keys, in one script call. */
  ackAndRecord(binding: StreamBinding, ids: readonly string[], recordKeys: readonly string[], policy: string): Promise<unknown> {
    const scripts = serverScripts(this.client);
    batchThisTick(this.client);
    const ttl = binding.idempotency?.ttlMs ?? 1;
    return scripts.nrsAckAndRecord(1 + recordKeys.length, binding.stream, ...recordKeys, binding.group, ttl, policy, ...ids);
  }
}
