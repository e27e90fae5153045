import type { LivenessSource } from '../server/liveness.js';

/** Where a stream on the page comes from. */
export type StreamSource = 'handlers' | 'option' | 'page';

/** One stream the page shows: a plain stream, or a partitioned one with its partition keys. */
export interface StreamTarget {
  /** The stream's name (`orders`, also for a partitioned stream). */
  readonly name: string;
  readonly source: StreamSource;
  /** Partition keys known from the servers' bindings; undefined: found out when it is sampled. */
  readonly partitions: string[] | undefined;
  /** Groups this process's handlers read of it. */
  readonly handledGroups: Set<string>;
}

/** What the servers of this process know of their streams: the dead-letter key of each stream key. */
export interface HandledKeys {
  readonly targets: StreamTarget[];
  /** Stream key (a partition's too) → the dead-letter key its server writes to. */
  readonly deadLetterKeys: Map<string, string>;
}

/**
 * The streams to show, in this order: the ones the handlers of every server listening in this
 * process read (their bindings, from `server.liveness()`: no Redis command), then the `streams`
 * option, then names typed into the page. A name appears once.
 */
export function streamTargets(servers: Iterable<LivenessSource>, configured: readonly string[], named: readonly string[]): HandledKeys {
  const byName = new Map<string, StreamTarget>();
  const deadLetterKeys = new Map<string, string>();
  for (const server of servers) {
    for (const { stream, group, deadLetterKey, partitionOf } of server.liveness().streams) {
      deadLetterKeys.set(stream, deadLetterKey);
      const name = partitionOf ?? stream;
      let target = byName.get(name);
      if (target === undefined) {
        target = { name, source: 'handlers', partitions: partitionOf === undefined ? undefined : [], handledGroups: new Set() };
        byName.set(name, target);
      }
      target.handledGroups.add(group);
      if (partitionOf !== undefined && !target.partitions?.includes(stream)) target.partitions?.push(stream);
    }
  }
  for (const [source, names] of [['option', configured], ['page', named]] as const) {
    for (const name of names) {
      if (!byName.has(name)) byName.set(name, { name, source, partitions: undefined, handledGroups: new Set() });
    }
  }
  for (const target of byName.values()) target.partitions?.sort(byPartitionIndex);
  return { targets: [...byName.values()], deadLetterKeys };
}

/** `orders:p2` before `orders:p10`. */
function byPartitionIndex(a: string, b: string): number {
  return Number(a.slice(a.lastIndexOf(':p') + 2)) - Number(b.slice(b.lastIndexOf(':p') + 2));
}
