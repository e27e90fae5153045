import { sumOrNull } from '../partition-totals.js';
import type { DelayedSample, GroupSample, StreamSample } from './top-sample.js';

/**
 * `top orders` of a partitioned stream: the rows of each partition, then one of the whole stream
 * (`orders (total)`): lengths, entries added, dead letters, delayed entries held and due, pending, lag and entries read summed
 * (null when a partition does not count them), consumers the most any partition has, the oldest
 * pending the longest idle. Rates of the total come out of the sums like any stream's.
 */
export function partitionedSamples(key: string, partitions: readonly StreamSample[]): StreamSample[] {
  const existing = partitions.filter((partition) => partition.exists);
  const names = [...new Set(existing.flatMap((partition) => partition.groups.map((group) => group.name)))];
  const total: StreamSample = {
    key: `${key} (total)`,
    exists: existing.length > 0,
    length: sumOrNull(existing.map((partition) => partition.length)) ?? 0,
    entriesAdded: sumOrNull(existing.map((partition) => partition.entriesAdded)),
    deadLetters: sumOrNull(partitions.map((partition) => partition.deadLetters)) ?? 0,
    delayed: delayedTotal(partitions.map((partition) => partition.delayed)),
    groups: names.map((name) => groupTotal(name, existing.flatMap((partition) => partition.groups.filter((group) => group.name === name)))),
    // One pause state for the whole stream: every partition carries the same.
    pausedGroups: partitions[0]?.pausedGroups ?? new Set(),
  };
  return [...partitions, total];
}

/** Held entries live on each partition's own keys (`{orders:p3}:delayed`); null when a partition could not be counted. */
function delayedTotal(parts: readonly (DelayedSample | null)[]): DelayedSample | null {
  const held = sumOrNull(parts.map((part) => part?.held ?? null));
  const due = sumOrNull(parts.map((part) => part?.due ?? null));
  return held === null || due === null ? null : { held, due };
}

function groupTotal(name: string, groups: readonly GroupSample[]): GroupSample {
  const present = groups.filter((group) => !group.missing);
  if (present.length === 0) return { ...(groups[0] as GroupSample), name };
  const idle = present.map((group) => group.oldestPendingIdleMs).filter((ms): ms is number => ms !== null);
  return {
    name,
    consumers: Math.max(...present.map((group) => group.consumers)),
    pending: sumOrNull(present.map((group) => group.pending)) ?? 0,
    lag: sumOrNull(present.map((group) => group.lag)),
    entriesRead: sumOrNull(present.map((group) => group.entriesRead)),
    oldestPendingIdleMs: idle.length === 0 ? null : Math.max(...idle),
  };
}

