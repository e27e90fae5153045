import { formatDuration } from '../human-units.js';
import type { PartitionedInfoOutput } from '../partition-totals.js';
import { formatTable } from '../table.js';
import { pausedLines, pausedName } from './info.view.js';

/**
 * `info` of a partitioned stream at a terminal: one line (and one of the delayed entries when some
 * are held), the partitions with a total, the groups per partition with a total per group.
 */
export function partitionedInfoView(output: PartitionedInfoOutput): string {
  const { total } = output;
  const added = total.entriesAdded === null ? '' : `, ${total.entriesAdded} added in all`;
  let text = `stream ${output.key}: ${output.partitionCount} partitions, ${total.length} entries${added}, ${total.groups.length} group(s)\n`;
  if (total.delayed !== undefined) {
    const { held, due, nextDueAt } = total.delayed;
    text += `delayed: ${held} held, ${due} due and not promoted yet, next due ${nextDueAt ?? '-'} (all partitions)\n`;
  }
  text += pausedLines(output.paused, ' (all partitions)');
  text += '\n';
  // The delayed columns only when some partition holds entries: a partition that holds none shows 0.
  const delayedColumns = total.delayed === undefined ? [] : [{ header: 'DELAYED', align: 'right' as const }, { header: 'DUE', align: 'right' as const }, { header: 'NEXT DUE' }];
  const delayedCells = (delayed: PartitionedInfoOutput['total']['delayed']) =>
    total.delayed === undefined ? [] : [delayed?.held ?? 0, delayed?.due ?? 0, delayed?.nextDueAt ?? null];
  text += formatTable(
    [{ header: 'PARTITION' }, { header: 'ENTRIES', align: 'right' }, { header: 'FIRST' }, { header: 'LAST' }, ...delayedColumns],
    [
      ...output.partitions.map(({ key, missing, stream, delayed }) => [missing ? `${key} (no key yet)` : key, stream.length, stream.firstEntryId, stream.lastEntryId, ...delayedCells(delayed)]),
      ['total', total.length, '', '', ...delayedCells(total.delayed)],
    ],
  );
  if (total.groups.length > 0) {
    const rows = total.groups.flatMap((group) => [
      ...output.partitions.flatMap(({ key, groups }) =>
        groups.filter((info) => info.name === group.name).map((info) => [pausedName(group.name, output.paused), key, info.consumers, info.pending, info.lag, info.entriesRead]),
      ),
      [pausedName(group.name, output.paused), 'total', group.consumers, group.pending, group.lag, group.entriesRead],
    ]);
    text += '\n' + formatTable(
      [
        { header: 'GROUP' },
        { header: 'PARTITION' },
        { header: 'CONSUMERS', align: 'right' },
        { header: 'PENDING', align: 'right' },
        { header: 'LAG', align: 'right' },
        { header: 'ENTRIES READ', align: 'right' },
      ],
      rows,
    );
  }
  if (total.consumers !== undefined) {
    text += `\nconsumers of ${total.group} (all partitions):\n`;
    text += total.consumers.length === 0
      ? '(none)\n'
      : formatTable(
          [{ header: 'CONSUMER' }, { header: 'PENDING', align: 'right' }, { header: 'IDLE', align: 'right' }, { header: 'INACTIVE', align: 'right' }],
          total.consumers.map((consumer) => [consumer.name, consumer.pending, formatDuration(consumer.idleMs), formatDuration(consumer.inactiveMs)]),
        );
  }
  return text;
}
