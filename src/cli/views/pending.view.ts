import type { PendingEntry, PendingSummary } from '../../claim/inspection.types.js';
import { formatDuration } from '../human-units.js';
import { formatTable } from '../table.js';

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

/** `pending --entries` at a terminal: one row per entry. */
export function pendingEntriesView(output: { key: string; group: string; entries: PendingEntry[] }): string {
  if (output.entries.length === 0) return `group ${output.group} of ${output.key}: no pending entries in this range\n`;
  return formatTable(
    [{ header: 'ID' }, { header: 'CONSUMER' }, { header: 'IDLE', align: 'right' }, { header: 'DELIVERIES', align: 'right' }],
    output.entries.map((entry) => [entry.id, entry.consumer, formatDuration(entry.idleMs), entry.deliveryCount]),
  );
}
