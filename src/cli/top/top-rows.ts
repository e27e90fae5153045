import type { GroupSample, TopSample } from './top-sample.js';

/** One line of `top`: a stream and one of its groups (or the stream alone when it has none). */
export interface TopRow {
  stream: string;
  group: string | null;
  length: number;
  /** Entries added per second since the previous sample (Redis 7.0+); null on the first sample. */
  inPerSecond: number | null;
  /** Entries the group acknowledged per second (read minus pending, Redis 7.0+); null on the first sample. */
  outPerSecond: number | null;
  lag: number | null;
  pending: number | null;
  oldestPendingIdleMs: number | null;
  consumers: number | null;
  deadLetters: number;
  /** Delayed entries held for the stream; null when Redis refuses the delayed keys. */
  delayedHeld: number | null;
  /** Of those, due on Redis' clock and not promoted yet (above 0 for long: no worker promotes them). */
  delayedDue: number | null;
  /** The group is paused for every worker (`nestjs-redis-streams pause`): its workers read nothing new. */
  paused: boolean;
  /** Why the row has no figures: `no such stream`, `no such group`. */
  note?: string;
}

/** Rows of the current sample, with rates measured against the previous one (when there is one). */
export function topRows(current: TopSample, previous?: TopSample): TopRow[] {
  const seconds = previous === undefined ? 0 : (current.at - previous.at) / 1_000;
  return current.streams.flatMap((stream) => {
    const before = previous?.streams.find((candidate) => candidate.key === stream.key);
    const inPerSecond = seconds > 0 ? rate(stream.entriesAdded, before?.entriesAdded, seconds) : null;
    const row = (group: string | null, figures: Partial<TopRow>): TopRow => ({
      stream: stream.key,
      group,
      length: stream.length,
      inPerSecond,
      outPerSecond: null,
      lag: null,
      pending: null,
      oldestPendingIdleMs: null,
      consumers: null,
      deadLetters: stream.deadLetters,
      delayedHeld: stream.delayed?.held ?? null,
      delayedDue: stream.delayed?.due ?? null,
      paused: group !== null && stream.pausedGroups.has(group),
      ...figures,
    });
    if (!stream.exists) return [row(null, { inPerSecond: null, note: 'no such stream' })];
    if (stream.groups.length === 0) return [row(null, { note: 'no groups' })];
    return stream.groups.map((group) => {
      if (group.missing) return row(group.name, { note: 'no such group' });
      const old = before?.groups.find((candidate) => candidate.name === group.name);
      return row(group.name, {
        outPerSecond: seconds > 0 ? rate(acknowledged(group), old === undefined ? null : acknowledged(old), seconds) : null,
        lag: group.lag,
        pending: group.pending,
        oldestPendingIdleMs: group.oldestPendingIdleMs,
        consumers: group.consumers,
      });
    });
  });
}

/** Entries the group has read and acknowledged; null when Redis does not count reads. */
function acknowledged(group: GroupSample): number | null {
  return group.entriesRead === null ? null : group.entriesRead - group.pending;
}

function rate(now: number | null, before: number | null | undefined, seconds: number): number | null {
  if (now === null || before === null || before === undefined) return null;
  return Math.max(0, now - before) / seconds;
}
