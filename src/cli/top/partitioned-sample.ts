import { sumOrNull } from '../partition-totals.js';
import type { GroupSample, StreamSample } from './top-sample.js';

/**
 * `top orders` of a partitioned stream: the rows of each partition, then one of the whole stream
 * (`orders (total)`): lengths, entries added, dead letters, pending, lag and entries read summed
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
    groups: names.map((name) => groupTotal(name, existing.flatMap((partition) => partition.groups.filter((group) => group.name === name)))),
  };
  return [...partitions, total];
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

