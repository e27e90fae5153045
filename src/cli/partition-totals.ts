import type { ConsumerInfo, GroupInfo } from '../claim/inspection.types.js';
import type { InfoOutput } from './views/info.view.js';

/** `info` of a partitioned stream: every partition as `info` shows one stream, and the totals. */
export interface PartitionedInfoOutput {
  key: string;
  /** How many partitions the metadata key records. */
  partitionCount: number;
  partitions: InfoOutput[];
  total: PartitionTotals;
  /** Groups paused for every worker: kept on the stream's own name, for every partition; absent when none. */
  paused?: NonNullable<InfoOutput['paused']>;
}

export interface PartitionTotals {
  /** Entries of every partition. */
  length: number;
  /** Summed over the partitions; null when a partition does not know it (Redis < 7.0). */
  entriesAdded: number | null;
  /** Per group: pending, lag and entries read summed, consumers the most any partition has. */
  groups: { name: string; consumers: number; pending: number; lag: number | null; entriesRead: number | null }[];
  /**
   * Delayed entries held for the stream: each partition holds its own (`{orders:p3}:delayed`),
   * summed here, next due the soonest of any partition; absent when no partition holds some.
   */
  delayed?: NonNullable<InfoOutput['delayed']>;
  group?: string;
  /** With `--group`: per consumer, pending summed, idle and inactive the least over the partitions. */
  consumers?: { name: string; pending: number; idleMs: number; inactiveMs: number | null }[];
}

/** Sums the partitions' `info` into one. */
export function partitionTotals(partitions: readonly InfoOutput[], group: string | undefined): PartitionTotals {
  const groups = new Map<string, PartitionTotals['groups'][number]>();
  for (const partition of partitions) for (const info of partition.groups) addGroup(groups, info);
  const totals: PartitionTotals = {
    length: partitions.reduce((sum, partition) => sum + partition.stream.length, 0),
    entriesAdded: sumOrNull(partitions.map((partition) => partition.stream.entriesAdded)),
    groups: [...groups.values()],
  };
  const delayed = delayedTotal(partitions);
  if (delayed !== undefined) totals.delayed = delayed;
  if (group === undefined) return totals;
  const consumers = new Map<string, NonNullable<PartitionTotals['consumers']>[number]>();
  for (const partition of partitions) for (const info of partition.consumers ?? []) addConsumer(consumers, info);
  return { ...totals, group, consumers: [...consumers.values()] };
}

/** Partitions that hold none (or whose delayed keys the ACL refuses) carry no `delayed` and add nothing. */
function delayedTotal(partitions: readonly InfoOutput[]): PartitionTotals['delayed'] {
  const parts = partitions.flatMap((partition) => (partition.delayed === undefined ? [] : [partition.delayed]));
  if (parts.length === 0) return undefined;
  const next = parts.map((part) => part.nextDueAt).filter((at): at is string => at !== null);
  return {
    held: parts.reduce((sum, part) => sum + part.held, 0),
    due: parts.reduce((sum, part) => sum + part.due, 0),
    nextDueAt: next.length === 0 ? null : next.reduce((soonest, at) => (Date.parse(at) < Date.parse(soonest) ? at : soonest)),
  };
}

function addGroup(groups: Map<string, PartitionTotals['groups'][number]>, info: GroupInfo): void {
  const total = groups.get(info.name);
  if (!total) {
    groups.set(info.name, { name: info.name, consumers: info.consumers, pending: info.pending, lag: info.lag, entriesRead: info.entriesRead });
    return;
  }
  total.consumers = Math.max(total.consumers, info.consumers);
  total.pending += info.pending;
  total.lag = sumOrNull([total.lag, info.lag]);
  total.entriesRead = sumOrNull([total.entriesRead, info.entriesRead]);
}

function addConsumer(consumers: Map<string, NonNullable<PartitionTotals['consumers']>[number]>, info: ConsumerInfo): void {
  const total = consumers.get(info.name);
  if (!total) {
    consumers.set(info.name, { name: info.name, pending: info.pending, idleMs: info.idleMs, inactiveMs: info.inactiveMs });
    return;
  }
  total.pending += info.pending;
  total.idleMs = Math.min(total.idleMs, info.idleMs);
  total.inactiveMs = total.inactiveMs === null || info.inactiveMs === null ? null : Math.min(total.inactiveMs, info.inactiveMs);
}

/** The sum, or null when any value is unknown (a partition on a Redis that does not report it). */
export function sumOrNull(values: readonly (number | null)[]): number | null {
  let sum = 0;
  for (const value of values) {
    if (value === null) return null;
    sum += value;
  }
  return sum;
}
