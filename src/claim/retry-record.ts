import { companionKey } from '../redis/keys.js';

/**
 * What a worker whose handler failed leaves next to the entry it released to the retry consumer:
 * one small string key per entry (`{orders}:retry:<group>:<id>`, in the stream's hash slot),
 * written with the release in one script and expiring on its own. Recovery reads the wait from
 * it (computed once, where the error was seen: jitter and function policies stay stable); the
 * inspection service shows the next retry time; a dead letter takes its last error.
 */
export interface RetryRecord {
  /** Redis delivery count of the delivery that failed. */
  deliveryCount: number;
  /** Wait before the next delivery, in ms, counted from the release (the entry's idle time). */
  delayMs: number;
  /** Consumer whose handler failed. */
  consumer: string;
  /** Text of the handler's error. */
  error: string;
}

/** Consumer of a group holding failed entries during their backoff, unless the servers name another. */
export const DEFAULT_RETRY_CONSUMER = 'retry';

/** How long a record outlives its wait: it is only needed until the retry or the dead letter. */
export const RETRY_RECORD_RETENTION_MS = 3_600_000;

export function retryRecordKey(stream: string, group: string, id: string): string {
  return companionKey(stream, `retry:${group}:${id}`);
}

export function encodeRetryRecord(record: RetryRecord): string {
  return JSON.stringify([record.deliveryCount, record.delayMs, record.consumer, record.error]);
}

/** The record, or `undefined` for a missing (expired) or foreign value. */
export function parseRetryRecord(value: unknown): RetryRecord | undefined {
  if (typeof value !== 'string') return undefined;
  try {
    const parsed = JSON.parse(value) as unknown;
    if (!Array.isArray(parsed) || parsed.length !== 4) return undefined;
    const [deliveryCount, delayMs, consumer, error] = parsed as unknown[];
    if (typeof deliveryCount !== 'number' || typeof delayMs !== 'number' || typeof consumer !== 'string' || typeof error !== 'string') {
      return undefined;
    }
    return { deliveryCount, delayMs, consumer, error };
  } catch {
    return undefined;
  }
}

/** The retry records of `ids` (one MGET; the keys share the stream's slot), by id; missing ones are left out. */
export async function readRetryRecords(
  redis: { mget(...keys: string[]): Promise<(string | null)[]> },
  stream: string,
  group: string,
  ids: readonly string[],
): Promise<Map<string, RetryRecord>> {
  const records = new Map<string, RetryRecord>();
  if (ids.length === 0) return records;
  const values = await redis.mget(...ids.map((id) => retryRecordKey(stream, group, id)));
  ids.forEach((id, i) => {
    const record = parseRetryRecord(values[i]);
    if (record !== undefined) records.set(id, record);
  });
  return records;
}
