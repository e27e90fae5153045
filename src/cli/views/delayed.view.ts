import type { DelayedCount, DelayedPage } from '../../delayed/delayed-inspection.js';
import { formatTable } from '../table.js';

const FIELDS_WIDTH = 60;

/** `delayed count` at a terminal. */
export function delayedCountView(count: DelayedCount): string {
  return formatTable(
    [{ header: 'STREAM' }, { header: 'HELD', align: 'right' }, { header: 'DUE, NOT PROMOTED', align: 'right' }, { header: 'NEXT DUE' }],
    [[count.stream, count.held, count.due, count.nextDueAt]],
  );
}

/** `delayed list` at a terminal: one row per held entry, and how to get the next page. */
export function delayedPageView(page: DelayedPage): string {
  if (page.entries.length === 0) return `no delayed entries of ${page.stream} held${page.held > 0 ? ' at this offset' : ''}\n`;
  let text = formatTable(
    [{ header: 'HOLD' }, { header: 'DUE AT' }, { header: 'DUE' }, { header: 'TRIM' }, { header: 'FIELDS' }],
    page.entries.map((entry) => [
      entry.hold,
      entry.dueAt,
      entry.due ? 'yes' : 'no',
      entry.trim,
      entry.fields === null ? '(no body)' : shorten(entry.fields.map(([name, value]) => `${name}=${value}`).join(' ')),
    ]),
  );
  if (page.nextOffset !== null) text += `\nmore: delayed list ${page.stream} --offset ${page.nextOffset}\n`;
  return text;
}

function shorten(text: string): string {
  return text.length <= FIELDS_WIDTH ? text : `${text.slice(0, FIELDS_WIDTH - 1)}…`;
}
