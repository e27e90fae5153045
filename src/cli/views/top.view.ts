import { formatDuration, formatRate } from '../human-units.js';
import { formatTable } from '../table.js';
import type { TopRow } from '../top/top-rows.js';
import { visibleLine } from '../visible-text.js';

/** Marks a paused group in the GROUP column. */
export const PAUSED = '(paused)';

export interface TopFrame {
  /** Where the figures come from, passwords masked. */
  source: string;
  intervalMs: number;
  /** Local time of the sample. */
  at: number;
  rows: readonly TopRow[];
}

/**
 * One screen of `top`: a header line and the table, every line made visible (control characters
 * escaped; the table's cells already are) and then cut to the terminal's width.
 */
export function topView(frame: TopFrame, columns = Number.POSITIVE_INFINITY): string {
  const time = new Date(frame.at).toTimeString().slice(0, 8);
  const header = `nestjs-redis-streams top · ${frame.source} · every ${formatDuration(frame.intervalMs)} · ${time} · Ctrl-C quits`;
  const table = formatTable(
    [
      { header: 'STREAM' },
      { header: 'GROUP' },
      { header: 'LENGTH', align: 'right' },
      { header: 'IN/s', align: 'right' },
      { header: 'OUT/s', align: 'right' },
      { header: 'LAG', align: 'right' },
      { header: 'PENDING', align: 'right' },
      { header: 'OLDEST PENDING', align: 'right' },
      { header: 'CONSUMERS', align: 'right' },
      { header: 'DEAD', align: 'right' },
      { header: 'DELAYED', align: 'right' },
      { header: 'DUE', align: 'right' },
      { header: '' },
    ],
    frame.rows.map((row) => [
      row.stream,
      // Beside the name, not in a column of its own at the right: a narrow terminal cuts that off.
      row.paused ? `${row.group} ${PAUSED}` : row.group,
      row.length,
      formatRate(row.inPerSecond),
      formatRate(row.outPerSecond),
      row.lag,
      row.pending,
      formatDuration(row.oldestPendingIdleMs),
      row.consumers,
      row.deadLetters,
      row.delayedHeld,
      row.delayedDue,
      row.note ?? '',
    ]),
  );
  return [header, '', ...table.trimEnd().split('\n')].map((line) => cut(visibleLine(line), columns)).join('\n') + '\n';
}

function cut(line: string, columns: number): string {
  return line.length <= columns ? line : line.slice(0, Math.max(0, columns - 1)) + '…';
}
