import type { PendingEntry, PendingSummary } from '../../claim/inspection.types.js';
import type { PartitionedPendingSummary } from '../partitioned-pending.js';
import { formatDuration, formatInstant } from '../human-units.js';
import { formatTable, type Cell, type Column } from '../table.js';

/** `pending` at a terminal: the count and id range, then pending entries per consumer. */
export function pendingSummaryView(summary: PendingSummary): string {
  const range = summary.count === 0 ? '' : ` (${summary.smallest} .. ${summary.largest})`;
  let text = `group ${summary.group} of ${summary.key}: ${summary.count} pending${range}\n`;
  if (summary.consumers.length > 0) {
    text += '\n' + formatTable(
      [{ header: 'CONSUMER' }, { header: 'PENDING', align: 'right' }],
      summary.consumers.map((consumer) => [consumer.name, consumer.pending]),
    );
  }
  return text;
}

/** `pending` of a partitioned stream at a terminal: the total, then each partition and the consumers over all of them. */
export function partitionedPendingSummaryView(summary: PartitionedPendingSummary): string {
  const { total } = summary;
  const range = total.count === 0 ? '' : ` (${total.smallest} .. ${total.largest})`;
  let text = `group ${summary.group} of ${summary.key} (${summary.partitions.length} partitions): ${total.count} pending${range}\n\n`;
  text += formatTable(
    [{ header: 'PARTITION' }, { header: 'PENDING', align: 'right' }],
    [...summary.partitions.map((partition): Cell[] => [partition.key, partition.count]), ['total', total.count]],
  );
  if (total.consumers.length > 0) {
    text += '\n' + formatTable(
      [{ header: 'CONSUMER' }, { header: 'PENDING', align: 'right' }],
      total.consumers.map((consumer) => [consumer.name, consumer.pending]),
    );
  }
  return text;
}

/** `pending --entries` at a terminal: one row per entry (with its partition on a partitioned stream); entries waiting for a retry add when and why. */
export function pendingEntriesView(output: { key: string; group: string; entries: (PendingEntry & { key?: string })[] }): string {
  if (output.entries.length === 0) return `group ${output.group} of ${output.key}: no pending entries in this range\n`;
  const partitioned = 'partitionKeys' in output;
  const columns: Column[] = [{ header: 'ID' }, ...(partitioned ? [{ header: 'PARTITION' }] : []), { header: 'CONSUMER' }, { header: 'IDLE', align: 'right' }, { header: 'DELIVERIES', align: 'right' }];
  const rows: Cell[][] = output.entries.map((entry) => [entry.id, ...(partitioned ? [entry.key ?? null] : []), entry.consumer, formatDuration(entry.idleMs), entry.deliveryCount]);
  if (output.entries.some((entry) => entry.retry !== undefined)) {
    columns.push({ header: 'NEXT RETRY' }, { header: 'LAST ERROR' });
    output.entries.forEach(({ retry }, i) => {
      // '' for an entry not waiting for a retry; '-' (null) where its retry record expired.
      if (retry === undefined) rows[i]!.push('', '');
      else rows[i]!.push(retry.nextRetryAt === null ? null : formatInstant(retry.nextRetryAt), retry.lastError);
    });
  }
  return formatTable(columns, rows);
}
