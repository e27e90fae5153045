import { formatDuration } from '../human-units.js';
import type { PauseChange } from '../pause-change.js';

/** `pause` / `resume` at a terminal: one line saying what changed, or why nothing did. */
export function pauseChangeView(change: PauseChange): string {
  const where = `group ${change.group} on ${change.key}${change.partitions === undefined ? '' : ` (all ${change.partitions} partitions)`}`;
  const since = `${change.pausedAt ?? '-'} (${formatDuration(change.pausedForMs)} ago)`;
  if (change.paused) {
    return change.changed
      ? `paused ${where}: its workers stop reading within a second; handlers already running finish\n`
      : `${where} already paused since ${since}\n`;
  }
  return change.changed ? `resumed ${where} (paused for ${formatDuration(change.pausedForMs)})\n` : `${where} was not paused\n`;
}
