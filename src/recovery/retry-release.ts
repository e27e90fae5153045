import { encodeRetryRecord, RETRY_RECORD_RETENTION_MS, retryRecordKey } from '../claim/retry-record.js';
import type { RedisClient } from '../redis/connection.js';
import type { LostLease } from './leases.js';
import { batches, MAX_SCRIPT_BATCH, recoveryScripts } from './scripts/loader.js';

/**
 * The two moves of a retry with backoff (docs/recovery.md, "Retry with backoff"): a worker whose
 * handler failed releases the entry to the group's retry consumer (with its retry record), and
 * recovery claims it back once its idle time reached the wait. Both are owner-checked scripts.
 */

export interface FailedEntry {
  id: string;
  /** Delivery count of the delivery that failed. */
  deliveryCount: number;
  /** Wait before the next delivery, in ms. */
  delayMs: number;
  /** Text of the handler's error. */
  error: string;
  /**
   * The hold was no delivery (a per-key rate limit had no token for it): the entry's delivery
   * count is set one lower, so the claim that brings it back leaves it where it was.
   */
  uncounted?: boolean;
}

export interface RetryReleaseRequest {
  stream: string;
  group: string;
  /** The consumer that must hold the entries (the failing worker). */
  consumer: string;
  retryConsumer: string;
  entries: readonly FailedEntry[];
}

export interface RetryReleaseResult {
  /** Ids now held by the retry consumer, idle time 0, with their record written. */
  released: string[];
  /** Ids this worker no longer held (claimed by another consumer, acked, deleted). */
  lost: LostLease[];
}

/** Releases failed entries to the retry consumer and writes their retry records, in one script call per 1000 ids. */
export async function releaseForRetry(client: RedisClient, request: RetryReleaseRequest): Promise<RetryReleaseResult> {
  const { stream, group, consumer, retryConsumer } = request;
  const scripts = recoveryScripts(client);
  const released: string[] = [];
  const lost: LostLease[] = [];
  for (const batch of batches(request.entries, MAX_SCRIPT_BATCH)) {
    const keys = [stream, ...batch.map((entry) => retryRecordKey(stream, group, entry.id))];
    const args: (string | number)[] = [group, consumer, retryConsumer, batch.length];
    for (const entry of batch) {
      // The record's count matches the pending entry's, which recovery checks before it trusts the wait.
      const count = entry.uncounted === true ? Math.max(0, entry.deliveryCount - 1) : entry.deliveryCount;
      const record = encodeRetryRecord({ deliveryCount: count, delayMs: entry.delayMs, consumer, error: entry.error });
      args.push(entry.id, record, entry.delayMs + RETRY_RECORD_RETENTION_MS, entry.uncounted === true ? count : '');
    }
    const rows = await scripts.nrsReleaseForRetry(keys.length, ...keys, ...args);
    for (const row of rows) {
      const [id, status, current] = row.map(String) as [string, string, string];
      if (status === 'released') released.push(id);
      else if (status === 'not_owner' || status === 'not_pending' || status === 'deleted') {
        lost.push({ id, reason: status, owner: status === 'not_owner' ? current : null });
      } else {
        throw new Error(`release-for-retry script returned an unknown status "${status}" for ${id}`);
      }
    }
  }
  return { released, lost };
}

export interface DueRetry {
  id: string;
  /** The idle time (time since the release) the entry must have reached: its wait. */
  dueMs: number;
  /** Its delivery count when the wait was computed: a claim is refused if it changed since. */
  deliveryCount: number;
}

export type RetryClaimStatus = 'not_owner' | 'not_due' | 'not_pending' | 'deleted';

export interface RetryClaimResult {
  /** Entries now held by `consumer`, delivery count raised by one, with `[f1, v1, …]` as Buffers. */
  claimed: { id: string; flat: Buffer[] }[];
  /** Ids left where they are, and why (`deleted`: the entry is gone from the stream). */
  skipped: { id: string; status: RetryClaimStatus }[];
}

/** Claims due entries of the retry consumer for `consumer` (owner and idle time checked in the script). */
export async function claimDueRetries(
  client: RedisClient,
  request: { stream: string; group: string; retryConsumer: string; consumer: string; entries: readonly DueRetry[] },
): Promise<RetryClaimResult> {
  const { stream, group, retryConsumer, consumer } = request;
  const scripts = recoveryScripts(client);
  const result: RetryClaimResult = { claimed: [], skipped: [] };
  for (const batch of batches(request.entries, MAX_SCRIPT_BATCH)) {
    const args: (string | number)[] = [group, retryConsumer, consumer, batch.length];
    for (const entry of batch) args.push(entry.id, entry.dueMs, entry.deliveryCount);
    // Read as Buffers, like recovery's own XCLAIM: a handler with `extras.raw: 'buffers'` must get
    // the exact bytes (text decoding would turn non-UTF-8 bytes into U+FFFD); the server decodes
    // them for every other handler.
    const rows = await scripts.nrsClaimRetryBuffer(stream, ...args);
    for (const [idBytes, statusBytes, fields] of rows as [Buffer, Buffer, Buffer[] | Buffer][]) {
      const id = idBytes.toString();
      const status = statusBytes.toString();
      if (status === 'claimed' && Array.isArray(fields)) result.claimed.push({ id, flat: fields });
      else if (status === 'not_owner' || status === 'not_due' || status === 'not_pending' || status === 'deleted') {
        result.skipped.push({ id, status });
      } else {
        throw new Error(`claim-retry script returned an unknown status "${status}" for ${id}`);
      }
    }
  }
  return result;
}
