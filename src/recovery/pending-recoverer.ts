import type { Logger } from '@nestjs/common';
import type { StreamInspector } from '../claim/stream-inspector.js';
import type { PendingEntry } from '../claim/inspection.types.js';
import { readRetryRecords, retryRecordKey, type RetryRecord } from '../claim/retry-record.js';
import type { RedisClient } from '../redis/connection.js';
import type { DeadLetterMoveResult } from './dead-letter-move.js';
import type { RecoveredEntry, RecoveryHost } from './recovery-host.js';
import type { RecoveryTickResult } from './recovery-stats.js';
import { claimIdleEntries, type IdleEntry } from './idle-claim.js';
import { claimDueRetries, type DueRetry } from './retry-release.js';
import type { ResolvedRetryPolicy } from './retry-policy.js';

/** What a stream's recoverer uses from its scheduler. */
export interface RecoveryServices {
  readonly host: RecoveryHost;
  readonly redis: RedisClient;
  readonly inspector: StreamInspector;
  readonly logger: Logger;
  readonly pageSize: number;
  readonly maxPages: number;
  /** Consumer holding failed entries during their backoff. */
  readonly retryConsumer: string;
  /** Atomic move (re-checks every condition in the script); reports each dead letter. */
  deadLetter(request: {
    stream: string;
    group: string;
    ids: string[];
    reason: string;
    minDeliveries: number;
    minIdleTime: number;
    /** Only entries this consumer holds (re-checked in the script). */
    expectedConsumer?: string;
    /** Last errors known from retry records (they win over this process's memory). */
    errors?: Record<string, string>;
  }, tally: RecoveryTickResult): Promise<DeadLetterMoveResult>;
  /** Acks away pending ids whose entry is gone and reports them (once per process); counted in `tally`. */
  ackLost(stream: string, group: string, ids: readonly string[], tally: RecoveryTickResult): Promise<void>;
  reportRecovered(stream: string, group: string, ids: string[]): void;
  reportError(error: Error): void;
}

interface Candidate {
  readonly row: PendingEntry;
  /** Position in its XPENDING page. */
  readonly index: number;
  /** An entry of the retry consumer: the idle time (time since its release) it must have reached. */
  readonly dueMs?: number;
}

/** One stream + group as recovery sees it. */
export interface RecoveryTarget {
  readonly stream: string;
  readonly group: string;
  readonly minIdleTime: number;
  readonly maxDeliveries: number;
  /** The retry policy of this stream's handler, if any: the wait of a failed entry whose retry record expired. */
  readonly retry?: ResolvedRetryPolicy | undefined;
}

/**
 * Recovery of one stream + group: pages through the group's pending list with XPENDING (a cursor
 * kept across ticks, so idle entries behind a long run of live ones are reached), and for each
 * entry idle ≥ `minIdleTime` that this process does not hold:
 * - delivered `maxDeliveries` times already → dead-lettered (reason `max_deliveries`), never run again;
 * - otherwise claimed (claim-idle.lua: the idle time re-checked in the same step as the XCLAIM,
 *   so two recoverers never take the same entry and a renewed lease wins) and handed to the
 *   handlers, no more than the server's free prefetch slots; an entry found pending with its
 *   body gone is acked away and reported lost, one acked meanwhile is not.
 * XPENDING (rather than XAUTOCLAIM) gives each entry's delivery count before the claim, which
 * the poison bound needs, and lets us skip our own in-flight entries instead of re-claiming them.
 *
 * Entries of the retry consumer (a live worker's handler failed and released them) are no crash:
 * they are due when their idle time, the time since the failure, reaches the wait in their retry
 * record, whatever `minIdleTime`; exhausted ones are dead-lettered at once. `tick(result, true)`
 * looks at those entries only (XPENDING … retryConsumer, a cursor of its own): the short ticks
 * that keep small backoffs on time cost one XPENDING of the waiting entries.
 */
export class PendingRecoverer {
  /** Last XPENDING row handled; `-` starts at the head of the pending list. */
  private cursor = '-';
  /** The same for the retry consumer's entries only (retry ticks). */
  private retryCursor = '-';

  constructor(
    readonly target: RecoveryTarget,
    private readonly services: RecoveryServices,
  ) {}

  get position(): string {
    return this.cursor;
  }

  /** One tick: the whole pending list (`retriesOnly`: only the retry consumer's entries). */
  async tick(result: RecoveryTickResult, retriesOnly = false): Promise<void> {
    const { host, inspector, pageSize, maxPages, retryConsumer } = this.services;
    const { stream, group, minIdleTime, maxDeliveries } = this.target;
    for (let page = 0; page < maxPages; page++) {
      const cursor = retriesOnly ? this.retryCursor : this.cursor;
      const rows = await inspector.pendingRange(stream, group, {
        start: cursor === '-' ? '-' : `(${cursor}`,
        count: pageSize,
        ...(retriesOnly ? { consumer: retryConsumer } : {}),
        retryConsumer: false,
      });
      const poison: Candidate[] = [];
      const handedOffPoison: Candidate[] = [];
      let claimable: Candidate[] = [];
      const waiting: Candidate[] = [];
      const handoff = host.handoffConsumerName?.();
      for (let index = 0; index < rows.length; index++) {
        const row = rows[index] as PendingEntry;
        if (host.isInFlight(stream, group, row.id)) continue;
        if (row.consumer === retryConsumer) {
          waiting.push({ row, index });
          continue;
        }
        if (row.idleMs < minIdleTime) continue;
        // A handed-off entry was fetched but never run on its last delivery: that one does not count.
        if (row.consumer === handoff) (row.deliveryCount > maxDeliveries ? handedOffPoison : claimable).push({ row, index });
        else (row.deliveryCount >= maxDeliveries ? poison : claimable).push({ row, index });
      }
      // Retry records: the wait of entries waiting for a retry, the last error of those dead-lettered.
      // Only read where retries happen: without a policy there is no record, and a worker's ACL
      // need not allow the record keys.
      const withRecords = this.target.retry === undefined ? waiting : [...waiting, ...poison];
      const records = await readRetryRecords(this.services.redis, stream, group, withRecords.map((candidate) => candidate.row.id));
      const retryPoison: Candidate[] = [];
      for (const candidate of waiting) {
        const { row } = candidate;
        if (row.deliveryCount >= maxDeliveries) retryPoison.push(candidate);
        else {
          const dueMs = this.retryWait(row, records.get(row.id));
          if (row.idleMs >= dueMs) claimable.push({ ...candidate, dueMs });
        }
      }
      if (waiting.length > 0) claimable = claimable.sort((a, b) => a.index - b.index);
      // Dead letters need no slot; a failed move (say a WRONGTYPE dead-letter key) leaves those
      // entries pending and is reported, without holding up the claims.
      if (poison.length > 0) await this.deadLetterPoison(poison.map((candidate) => candidate.row), maxDeliveries, result, records);
      if (handedOffPoison.length > 0) await this.deadLetterPoison(handedOffPoison.map((candidate) => candidate.row), maxDeliveries + 1, result);
      // Exhausted in a live worker: no need to wait for minIdleTime (nor for its backoff).
      if (retryPoison.length > 0) {
        await this.deadLetterPoison(retryPoison.map((candidate) => candidate.row), maxDeliveries, result, records, retryConsumer);
      }
      // Never more than the free prefetch slots: what does not fit waits for the next tick.
      const reserved = claimable.length === 0 ? 0 : await host.reservePrefetchSlots(claimable.length, undefined, { stream, group });
      const firstLeft = claimable[reserved]?.index ?? rows.length;
      if (reserved > 0) await this.claim(claimable.slice(0, reserved), reserved, result);

      const move = (to: string): void => {
        if (retriesOnly) this.retryCursor = to;
        else this.cursor = to;
      };
      if (firstLeft < rows.length) {
        // Out of slots: the next tick starts at the first entry left here.
        if (firstLeft > 0) move((rows[firstLeft - 1] as PendingEntry).id);
        return;
      }
      if (rows.length < pageSize) {
        move('-'); // reached the tail: the next tick starts over
        return;
      }
      move((rows[rows.length - 1] as PendingEntry).id);
    }
  }

  /**
   * The wait of an entry of the retry consumer: the one its failing worker computed (in its
   * record), else (record expired) this stream's policy for its count, else `minIdleTime`.
   */
  private retryWait(row: PendingEntry, record: RetryRecord | undefined): number {
    if (record !== undefined && record.deliveryCount === row.deliveryCount) return record.delayMs;
    const policy = this.target.retry;
    if (policy === undefined) return this.target.minIdleTime;
    try {
      return policy.delayFor(row.deliveryCount, record?.error);
    } catch {
      return this.target.minIdleTime;
    }
  }

  private async deadLetterPoison(
    rows: PendingEntry[],
    minDeliveries: number,
    result: RecoveryTickResult,
    records: ReadonlyMap<string, RetryRecord> = new Map(),
    retryConsumer?: string,
  ): Promise<void> {
    const { stream, group, minIdleTime } = this.target;
    const errors: Record<string, string> = {};
    for (const row of rows) {
      const record = records.get(row.id);
      if (record !== undefined) errors[row.id] = record.error;
    }
    try {
      // Counted in `result` by the move, also the ids moved before a failure half-way.
      const moved = await this.services.deadLetter(
        {
          stream,
          group,
          ids: rows.map((row) => row.id),
          reason: 'max_deliveries',
          // Re-checked in the script: a sibling that claimed or renewed it meanwhile keeps it.
          minDeliveries,
          // An entry of the retry consumer is taken at once, as long as no one claimed it meanwhile.
          ...(retryConsumer === undefined ? { minIdleTime } : { minIdleTime: 0, expectedConsumer: retryConsumer }),
          errors,
        },
        result,
      );
      const done = moved.moved.filter((id) => records.has(id));
      if (done.length > 0) await this.services.redis.del(...done.map((id) => retryRecordKey(stream, group, id)));
    } catch (error) {
      result.errors++;
      this.services.reportError(
        new Error(`dead-lettering ${rows.length} entries of "${stream}" (group "${group}") failed; they stay pending: ${(error as Error).message}`),
      );
    }
  }

  private async claim(candidates: Candidate[], reserved: number, result: RecoveryTickResult): Promise<void> {
    const { host, redis, logger, retryConsumer } = this.services;
    const { stream, group, minIdleTime } = this.target;
    // Entries of the handoff consumer keep their count (RETRYCOUNT): a graceful handoff is not a
    // delivery; the others' count rises by one as usual. Entries of the retry consumer go through
    // the owner-checked claim-retry script.
    const handoff = host.handoffConsumerName?.();
    const idle: IdleEntry[] = [];
    const retries: DueRetry[] = [];
    const deliveryCount = new Map<string, number>();
    for (const { row, dueMs } of candidates) {
      deliveryCount.set(row.id, row.consumer === handoff ? row.deliveryCount : row.deliveryCount + 1);
      if (dueMs !== undefined) retries.push({ id: row.id, dueMs, deliveryCount: row.deliveryCount });
      else idle.push(row.consumer === handoff ? { id: row.id, keepCount: row.deliveryCount } : { id: row.id });
    }
    const claimed: RecoveredEntry[] = [];
    const deleted: string[] = [];
    try {
      const [retryClaim, idleClaim] = await Promise.all([
        retries.length === 0 ? undefined : claimDueRetries(redis, { stream, group, retryConsumer, consumer: host.consumer, entries: retries }),
        idle.length === 0 ? undefined : claimIdleEntries(redis, { stream, group, consumer: host.consumer, minIdleTime, entries: idle }),
      ]);
      result.retried += retryClaim?.claimed.length ?? 0;
      for (const { id, flat } of [...(retryClaim?.claimed ?? []), ...(idleClaim?.claimed ?? [])]) {
        claimed.push({ id, flat, deliveryCount: deliveryCount.get(id) ?? 1 });
      }
      // Only an entry still pending when found gone is lost: one acked meanwhile (and with
      // XACKDEL deleted) by the worker that claimed it first was handled.
      for (const { id, status } of [...(retryClaim?.skipped ?? []), ...(idleClaim?.skipped ?? [])]) if (status === 'deleted') deleted.push(id);
    } catch (error) {
      host.releasePrefetchSlots(reserved, { stream, group });
      throw error;
    }
    // Handed over first (releasing the reservation), then the bookkeeping of what was not claimed.
    const taken = host.dispatchEntries(stream, group, claimed, reserved);
    if (claimed.length > 0) {
      result.claimed += claimed.length;
      this.services.reportRecovered(stream, group, claimed.map((entry) => entry.id));
    }
    if (deleted.length > 0) await this.services.ackLost(stream, group, deleted, result);
    if (taken < claimed.length) {
      logger.warn(
        `${claimed.length - taken} recovered entries of "${stream}" (group "${group}") were not started (server closing); they stay pending`,
      );
    }
  }
}
