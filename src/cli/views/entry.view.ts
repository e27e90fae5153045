import type { EntryStatus } from '../../lifecycle/entry-status.js';
import { formatDuration } from '../human-units.js';
import { formatTable } from '../table.js';

/** `entry` at a terminal: the entry's state and where it is, then one row per consumer group. */
export function entryStatusView(status: EntryStatus): string {
  let text = `entry ${status.id} of ${status.stream}: ${status.state}`;
  if (status.promotedTo !== null) text += ` (promoted hold: entry ${status.promotedTo})`;
  if (status.key !== null && status.key !== status.stream) text += ` (in ${status.key})`;
  if (status.dueAt !== null) text += `, due at ${status.dueAt}`;
  text += '\n';
  if (status.groups.length > 0) {
    text +=
      '\n' +
      formatTable(
        [{ header: 'GROUP' }, { header: 'STATE' }, { header: 'CONSUMER' }, { header: 'DELIVERIES', align: 'right' }, { header: 'IDLE', align: 'right' }, { header: 'DEAD LETTER' }],
        status.groups.map((group) => [
          group.group,
          group.state,
          group.consumer,
          group.deliveries,
          group.idleMs === null ? null : formatDuration(group.idleMs),
          group.deadLetter === null ? null : `${group.deadLetter.id} ${group.deadLetter.reason}: ${group.deadLetter.error}`,
        ]),
      );
  }
  if (!status.deadLettersSearched) text += '\nthe dead-letter search stopped at its bound (--dead-letter-scan): a done entry may have been dead-lettered further on\n';
  return text;
}
