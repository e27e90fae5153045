import { Logger } from '@nestjs/common';
import type { EntriesLostNotice, RecoveryEmit } from './recovery-events.js';
import { RecentIds } from './recent-ids.js';
import { emptyStats, type RecoveryStats } from './recovery-stats.js';

/**
 * Where a server's recovery reports to: its counters, its log and its events. Shared by the
 * scheduler, its ticks and its dead-letter moves, so each counts and reports the same way.
 */
export class RecoveryReporter {
  readonly counters: RecoveryStats = emptyStats();
  /** Pending ids already reported lost: the restart re-read and a tick's claim may both find one. */
  readonly reportedLost = new RecentIds();

  constructor(
    readonly emit: RecoveryEmit = () => undefined,
    /** The server passes its redacting logger: recovery's lines name streams, ids and errors, which may hold a password. */
    readonly logger: Logger = new Logger('RedisStreamsRecovery'),
  ) {}

  /** Counters since start (a copy). */
  stats(): RecoveryStats {
    return { ...this.counters };
  }

  recovered(stream: string, group: string, ids: string[]): void {
    this.logger.log(`recovered ${ids.length} idle entries of "${stream}" (group "${group}"): ${preview(ids)}`);
    this.emit('recovered', { stream, group, ids });
  }

  lost(notice: EntriesLostNotice): void {
    if (notice.reason === 'trimmed_pending') {
      this.logger.warn(
        `${notice.count} pending entries of "${notice.stream}" (group "${notice.group}") were trimmed or deleted before they were handled; acked them away: ${preview(notice.ids)}`,
      );
    } else {
      const howMany = notice.count > 0 ? `${notice.count} entries` : 'entries';
      this.logger.warn(
        `${howMany} of "${notice.stream}" were trimmed before group "${notice.group}" read them (last delivered ${notice.lastDeliveredId}, first entry ${notice.firstEntryId}): MAXLEN is smaller than the backlog`,
      );
    }
    this.emit('entriesLost', notice);
  }

  error(error: Error): void {
    this.counters.lastError = error.message;
    this.logger.error(error.message);
    this.emit('error', error);
  }
}

/** Ids for a log line: the first ten, then how many in all. */
export function preview(ids: readonly string[]): string {
  return ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')}, … (${ids.length})`;
}
