import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { nonEmptyStringOption } from '../validation.js';
import { batchSizeOption, millisecondsOption, nameListOption } from './recovery-validation.js';
import { batches, recoveryScripts } from './scripts/loader.js';

export interface ReapConsumersRequest {
  stream: string;
  group: string;
  /** Consumers to delete if they hold no pending entries. */
  consumers: readonly string[];
  /**
   * Delete only consumers whose XINFO CONSUMERS `idle` is at least this, in ms. Default 0 (no
   * check). Redis 7.2+ resets `idle` on every read attempt, older versions on successful ones.
   */
  minIdleTime?: number;
  /**
   * Lease (heartbeat) key of a consumer: while it exists the consumer is kept. Must hash to the
   * stream's slot on Cluster (use `companionKey(stream, ...)`). Default: no lease check.
   */
  leaseKey?: (consumer: string) => string;
  /** Consumers per script call, 1..1000. Default 100. */
  batchSize?: number;
}

export type ReapStatus =
  /** XGROUP DELCONSUMER ran: it held no pending entries (also reported for an unknown consumer when `minIdleTime` is 0). */
  | 'deleted'
  /** Kept: it holds pending entries (deleting it would drop them for good). */
  | 'has_pending'
  /** Kept: idle below `minIdleTime`. */
  | 'active'
  /** Kept: its lease key exists. */
  | 'lease_alive'
  /** No such consumer (or group / stream). */
  | 'missing';

export interface ReapResult {
  /** Consumers deleted. */
  deleted: string[];
  /** Every consumer's outcome, in request order. */
  outcomes: { consumer: string; status: ReapStatus }[];
}

const REAP_STATUSES: ReadonlySet<string> = new Set(['deleted', 'has_pending', 'active', 'lease_alive', 'missing']);

/**
 * Deletes consumers that hold no pending entries (atomicity A9): the "0 pending" check and
 * XGROUP DELCONSUMER run in one Lua script, so a consumer that reads an entry concurrently is
 * either kept or deleted before it read (and then recreated by its read) — never deleted with
 * the entry in its pending list.
 */
export async function reapConsumers(client: RedisClient, request: ReapConsumersRequest): Promise<ReapResult> {
  const stream = nonEmptyStringOption('stream', request.stream);
  const group = nonEmptyStringOption('group', request.group);
  const consumers = nameListOption('consumers', request.consumers);
  const minIdleTime = millisecondsOption('minIdleTime', request.minIdleTime, 0);
  const batchSize = batchSizeOption('batchSize', request.batchSize);
  const leaseKey = request.leaseKey;
  if (leaseKey !== undefined && typeof leaseKey !== 'function') {
    throw new RedisStreamsOptionError('leaseKey', 'must be a function (consumer) => key');
  }

  const scripts = recoveryScripts(client);
  const outcomes: ReapResult['outcomes'] = [];
  for (const batch of batches(consumers, batchSize)) {
    const keys = [stream, ...(leaseKey ? batch.map((consumer) => leaseKey(consumer)) : [])];
    const rows = await scripts.nrsReapConsumers(keys.length, ...keys, group, minIdleTime, batch.length, ...batch);
    for (const row of rows) {
      const [consumer, status] = row.map(String) as [string, string];
      if (!REAP_STATUSES.has(status)) throw new Error(`reap-consumers script returned an unknown status "${status}" for ${consumer}`);
      outcomes.push({ consumer, status: status as ReapStatus });
    }
  }
  return { deleted: outcomes.filter((o) => o.status === 'deleted').map((o) => o.consumer), outcomes };
}
