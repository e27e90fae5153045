import type { ConsumerInfo, GroupInfo, StreamInfo } from '../../claim/inspection.types.js';
import { formatDuration } from '../human-units.js';
import { formatTable } from '../table.js';
import { PAUSED } from './top.view.js';

export interface InfoOutput {
  key: string;
  /** A partition of a partitioned stream that has no key yet (no entry reached it): shown empty. */
  missing?: true;
  stream: StreamInfo;
  groups: GroupInfo[];
  group?: string;
  consumers?: ConsumerInfo[];
  /** Delayed entries held for the stream (docs/scheduling.md); absent when none (or the ACL refuses the keys). */
  delayed?: { held: number; due: number; nextDueAt: string | null };
  /** Groups paused for every worker (`pause`), since when (Redis' clock); absent when none (or the ACL refuses the key). */
  paused?: { group: string; pausedAt: string }[];
}

/** `info` at a terminal: the stream in one line, then its groups, then the chosen group's consumers. */
export function infoView(output: InfoOutput): string {
  const { stream } = output;
  const added = stream.entriesAdded === null ? '' : `, ${stream.entriesAdded} added in all`;
  const range = stream.firstEntryId === null ? 'empty' : `${stream.firstEntryId} .. ${stream.lastEntryId}`;
  let text = `stream ${output.key}: ${stream.length} entries (${range})${added}, ${stream.groups} group(s)\n`;
  if (output.delayed !== undefined) {
    const { held, due, nextDueAt } = output.delayed;
    text += `delayed: ${held} held, ${due} due and not promoted yet, next due ${nextDueAt ?? '-'}\n`;
  }
  text += pausedLines(output.paused, '');
  if (output.groups.length > 0) {
    text += '\n' + formatTable(
      [
        { header: 'GROUP' },
        { header: 'CONSUMERS', align: 'right' },
        { header: 'PENDING', align: 'right' },
        { header: 'LAG', align: 'right' },
        { header: 'ENTRIES READ', align: 'right' },
        { header: 'LAST DELIVERED' },
      ],
      output.groups.map((group) => [pausedName(group.name, output.paused), group.consumers, group.pending, group.lag, group.entriesRead, group.lastDeliveredId]),
    );
  }
  if (output.consumers !== undefined) {
    text += `\nconsumers of ${output.group}:\n`;
    text += output.consumers.length === 0
      ? '(none)\n'
      : formatTable(
          [{ header: 'CONSUMER' }, { header: 'PENDING', align: 'right' }, { header: 'IDLE', align: 'right' }, { header: 'INACTIVE', align: 'right' }],
          output.consumers.map((consumer) => [consumer.name, consumer.pending, formatDuration(consumer.idleMs), formatDuration(consumer.inactiveMs)]),
        );
  }
  return text;
}

/** A group's name, marked as `top` marks it when it is paused. */
export function pausedName(group: string, paused: InfoOutput['paused']): string {
  return paused?.some((each) => each.group === group) === true ? `${group} ${PAUSED}` : group;
}

/** One line per paused group, under the stream's line (`where`: what the pause covers, as a suffix). */
export function pausedLines(paused: InfoOutput['paused'], where: string): string {
  return (paused ?? []).map(({ group, pausedAt }) => `paused: group ${group} since ${pausedAt}${where}\n`).join('');
}
