import type { PendingEntry, PendingRangeOptions, PendingSummary } from '../claim/inspection.types.js';
import type { StreamInspector } from '../claim/stream-inspector.js';
import { mergeById } from '../partitions/merge-by-id.js';

/** `pending <stream> <group>` of a partitioned stream: each partition's XPENDING summary and their total. */
export interface PartitionedPendingSummary {
  key: string;
  group: string;
  partitions: PendingSummary[];
  /** Counts summed, the lowest and highest id over the partitions, per consumer its pending summed. */
  total: Omit<PendingSummary, 'key' | 'group'>;
}

/** `pending --entries` of a partitioned stream: entries of every partition in id order, each naming its partition. */
export interface PartitionedPendingEntries {
  key: string;
  group: string;
  partitionKeys: readonly string[];
  entries: (PendingEntry & { key: string })[];
}

export async function partitionedPendingSummary(
  inspector: StreamInspector,
  key: string,
  group: string,
  partitionKeys: readonly string[],
): Promise<PartitionedPendingSummary> {
  const partitions = await Promise.all(partitionKeys.map((partition) => inspector.pendingSummary(partition, group)));
  const pending = new Map<string, number>();
  for (const { consumers } of partitions) for (const { name, pending: count } of consumers) pending.set(name, (pending.get(name) ?? 0) + count);
  const ids = partitions.flatMap(({ smallest, largest }) => (smallest === null || largest === null ? [] : [smallest, largest]));
  const ordered = mergeById([ids], (id) => id, ids.length).items;
  return {
    key,
    group,
    partitions,
    total: {
      count: partitions.reduce((sum, partition) => sum + partition.count, 0),
      smallest: ordered[0] ?? null,
      largest: ordered.at(-1) ?? null,
      consumers: [...pending].map(([name, count]) => ({ name, pending: count })),
    },
  };
}

/**
 * Each partition's entries in the range (at most `count` each), merged in id order and cut to
 * `count`: the page a single stream would give, over all partitions.
 */
export async function partitionedPendingEntries(
  inspector: StreamInspector,
  key: string,
  group: string,
  partitionKeys: readonly string[],
  range: PendingRangeOptions,
): Promise<PartitionedPendingEntries> {
  const pages = await Promise.all(
    partitionKeys.map(async (partition) => (await inspector.pendingRange(partition, group, range)).map((entry) => ({ key: partition, ...entry }))),
  );
  const { items } = mergeById(pages, (entry) => entry.id, range.count ?? 100);
  return { key, group, partitionKeys, entries: items };
}
