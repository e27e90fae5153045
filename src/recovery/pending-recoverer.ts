import type { Logger } from '@nestjs/common';
import type { StreamInspector } from '../claim/stream-inspector.js';
import type { PendingEntry } from '../claim/inspection.types.js';
import type { RedisClient } from '../redis/connection.js';
import type { DeadLetterMoveResult } from './dead-letter-move.js';
import type { RecoveredEntry, RecoveryHost } from './recovery-host.js';
import type { RecoveryTickResult } from './recovery-stats.js';

/** What a stream's recoverer uses from its scheduler. */
export interface RecoveryServices {
  readonly host: RecoveryHost;
  readonly redis: RedisClient;
  readonly inspector: StreamInspector;
  readonly logger: Logger;
  readonly pageSize: number;
  readonly maxPages: number;
  /** Atomic move (re-checks every condition in the script); reports each dead letter. */
  deadLetter(request: {
    stream: string;
    group: string;
    ids: string[];
    reason: string;
    minDeliveries: number;
    minIdleTime: number;
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
}

/** One stream + group as recovery sees it. */
export interface RecoveryTarget {
  readonly stream: string;
  readonly group: string;
  readonly minIdleTime: number;
  readonly maxDeliveries: number;
}

/**
 * Recovery of one stream + group: pages through the group's pending list with XPENDING (a cursor
 * kept across ticks, so idle entries behind a long run of live ones are reached), and for each
 * entry idle ≥ `minIdleTime` that this process does not hold:
 * - delivered `maxDeliveries` times already → dead-lettered (reason `max_deliveries`), never run again;
 * - otherwise claimed with `XCLAIM … minIdleTime ids` (Redis re-checks the idle time, so two
 *   recoverers never take the same entry and a renewed lease wins) and handed to the handlers,
 *   no more than the server's free prefetch slots.
 * XPENDING (rather than XAUTOCLAIM) gives each entry's delivery count before the claim, which
 * the poison bound needs, and lets us skip our own in-flight entries instead of re-claiming them.
 */
export class PendingRecoverer {
  /** Last XPENDING row handled; `-` starts at the head of the pending list. */
  private cursor = '-';

  constructor(
    readonly target: RecoveryTarget,
    private readonly services: RecoveryServices,
  ) {}

  get position(): string {
    return this.cursor;
  }

  async tick(result: RecoveryTickResult): Promise<void> {
    const { host, inspector, pageSize, maxPages } = this.services;
    const { stream, group, minIdleTime, maxDeliveries } = this.target;
    for (let page = 0; page < maxPages; page++) {
      const rows = await inspector.pendingRange(stream, group, {
        start: this.cursor === '-' ? '-' : `(${this.cursor}`,
        count: pageSize,
      });
      const poison: Candidate[] = [];
      const handedOffPoison: Candidate[] = [];
      const claimable: Candidate[] = [];
      const handoff = host.handoffConsumerName?.();
      for (let index = 0; index < rows.length; index++) {
        const row = rows[index] as PendingEntry;
        if (row.idleMs < minIdleTime || host.isInFlight(stream, group, row.id)) continue;
        // A handed-off entry was fetched but never run on its last delivery: that one does not count.
        if (row.consumer === handoff) (row.deliveryCount > maxDeliveries ? handedOffPoison : claimable).push({ row, index });
        else (row.deliveryCount >= maxDeliveries ? poison : claimable).push({ row, index });
      }
      // Dead letters need no slot; a failed move (say a WRONGTYPE dead-letter key) leaves those
      // entries pending and is reported, without holding up the claims.
      if (poison.length > 0) await this.deadLetterPoison(poison.map((candidate) => candidate.row), maxDeliveries, result);
      if (handedOffPoison.length > 0) await this.deadLetterPoison(handedOffPoison.map((candidate) => candidate.row), maxDeliveries + 1, result);
      // Never more than the free prefetch slots: what does not fit waits for the next tick.
      const reserved = claimable.length === 0 ? 0 : await host.reservePrefetchSlots(claimable.length);
      const firstLeft = claimable[reserved]?.index ?? rows.length;
      if (reserved > 0) await this.claim(claimable.slice(0, reserved).map((candidate) => candidate.row), reserved, result);

      if (firstLeft < rows.length) {
        // Out of slots: the next tick starts at the first entry left here.
        if (firstLeft > 0) this.cursor = (rows[firstLeft - 1] as PendingEntry).id;
        return;
      }
      if (rows.length < pageSize) {
        this.cursor = '-'; // reached the tail: the next tick starts over
        return;
      }
      this.cursor = (rows[rows.length - 1] as PendingEntry).id;
    }
  }

  private async deadLetterPoison(rows: PendingEntry[], minDeliveries: number, result: RecoveryTickResult): Promise<void> {
    const { stream, group, minIdleTime } = this.target;
    try {
      // Counted in `result` by the move, also the ids moved before a failure half-way.
      await this.services.deadLetter(
        {
          stream,
          group,
          ids: rows.map((row) => row.id),
          reason: 'max_deliveries',
          // Re-checked in the script: a sibling that claimed or renewed it meanwhile keeps it.
          minDeliveries,
          minIdleTime,
        },
        result,
      );
    } catch (error) {
      result.errors++;
      this.services.reportError(
        new Error(`dead-lettering ${rows.length} entries of "${stream}" (group "${group}") failed; they stay pending: ${(error as Error).message}`),
      );
    }
  }

  private async claim(rows: PendingEntry[], reserved: number, result: RecoveryTickResult): Promise<void> {
    const { host, redis, logger } = this.services;
    const { stream, group, minIdleTime } = this.target;
    const ids = rows.map((row) => row.id);
    // Entries of the handoff consumer keep their count (RETRYCOUNT): a graceful handoff is not a
    // delivery. One XCLAIM per distinct count among them; the others' count rises by one as usual.
    const handoff = host.handoffConsumerName?.();
    const plain: string[] = [];
    const keepCount = new Map<number, string[]>();
    for (const row of rows) {
      if (row.consumer !== handoff) plain.push(row.id);
      else keepCount.set(row.deliveryCount, [...(keepCount.get(row.deliveryCount) ?? []), row.id]);
    }
    const deliveryCount = new Map<string, number>();
    for (const row of rows) deliveryCount.set(row.id, row.consumer === handoff ? row.deliveryCount : row.deliveryCount + 1);
    let replies: unknown[];
    try {
      replies = await Promise.all([
        // Bytes (callBuffer): the server turns them into text unless the handler wants the exact bytes.
        ...(plain.length > 0 ? [redis.callBuffer('XCLAIM', stream, group, host.consumer, minIdleTime, ...plain)] : []),
        ...[...keepCount].map(([count, kept]) =>
          redis.callBuffer('XCLAIM', stream, group, host.consumer, minIdleTime, ...kept, 'RETRYCOUNT', count),
        ),
      ]);
    } catch (error) {
      host.releasePrefetchSlots(reserved);
      throw error;
    }
    const claimed: RecoveredEntry[] = [];
    const returned = new Set<string>();
    for (const item of replies.flatMap((reply) => (Array.isArray(reply) ? reply : []))) {
      if (!Array.isArray(item)) continue;
      const id = String(item[0]);
      const flat = item[1];
      if (!Array.isArray(flat)) continue; // a deleted entry (old servers answer nil fields)
      returned.add(id);
      claimed.push({ id, flat: flat as Buffer[], deliveryCount: deliveryCount.get(id) ?? 1 });
    }
    // Handed over first (releasing the reservation), then the bookkeeping of what was not claimed.
    const taken = host.dispatchEntries(stream, group, claimed, reserved);
    if (claimed.length > 0) {
      result.claimed += claimed.length;
      this.services.reportRecovered(stream, group, claimed.map((entry) => entry.id));
    }
    const missing = ids.filter((id) => !returned.has(id));
    if (missing.length > 0) await this.checkMissing(missing, result);
    if (taken < claimed.length) {
      logger.warn(
        `${claimed.length - taken} recovered entries of "${stream}" (group "${group}") were not started (server closing); they stay pending`,
      );
    }
  }

  /**
   * Ids XCLAIM did not return: either someone else took (or renewed, or acked) them first, or
   * their entry is gone from the stream (trimmed/XDEL'ed; Redis 7 drops such PEL refs while
   * claiming, 6.2 keeps them). Gone ones are acked and reported, never silently dropped.
   */
  private async checkMissing(ids: string[], result: RecoveryTickResult): Promise<void> {
    const { redis } = this.services;
    const { stream, group } = this.target;
    const bodies = await Promise.all(ids.map((id) => redis.xrange(stream, id, id)));
    const deleted = ids.filter((_, i) => (bodies[i] as unknown[]).length === 0);
    if (deleted.length > 0) await this.services.ackLost(stream, group, deleted, result);
  }
}
