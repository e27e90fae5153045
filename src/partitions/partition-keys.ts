import { RedisStreamsOptionError } from '../errors.js';
import { companionKey, hashSlotOf, hashTagOf } from '../redis/keys.js';
import { describe } from '../validation.js';

/**
 * Partitioned streams: one pattern spread over `count` stream keys so that a hot pattern uses
 * every master of a Redis Cluster. Producer and consumer both name the keys through this file.
 *
 * Partition `i` of stream `orders` is `orders:p<i>` (`orders:p0` … `orders:p7`): the keys carry no
 * hash tag, so each is hashed whole to its own slot, and its companion keys (`{orders:p3}:dead`)
 * share that partition's slot. A single stream (count 1) is the stream itself.
 */

/** Largest partition count: more partitions than that is no longer "one hot pattern", and every one costs a reader slot. */
export const MAX_PARTITIONS = 1024;

/** The key of partition `index` of `stream` (`'*'`: the glob of every partition's key, for ACL rules and messages). */
export function partitionStreamKey(stream: string, index: number | '*'): string {
  return `${stream}:p${index}`;
}

/** Every stream key of `stream` spread over `count` partitions (`[stream]` itself when `count` is 1). */
export function partitionStreamKeys(stream: string, count: number): string[] {
  if (count === 1) return [stream];
  return Array.from({ length: count }, (_, index) => partitionStreamKey(stream, index));
}

/**
 * The partition of `partitionKey` among `count`: FNV-1a (32-bit) of the key's UTF-8 bytes, mod
 * `count`. Stable across processes, versions and languages, so one key always lands in one
 * partition (and so keeps its order) while the count stays the same.
 */
export function partitionIndexOf(partitionKey: string, count: number): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(partitionKey, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % count;
}

/**
 * The metadata key recording the partition count of `stream` (`{orders}:partitions`): written
 * (SET NX) by each side that partitions the stream, then compared with its own count.
 */
export function partitionsMetadataKey(stream: string): string {
  return companionKey(stream, 'partitions');
}

/** A partition count: an integer from 1 (not partitioned) to {@link MAX_PARTITIONS}. */
export function partitionCountOption(option: string, value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PARTITIONS) {
    throw new RedisStreamsOptionError(option, `must be an integer between 1 and ${MAX_PARTITIONS} (partitions of the pattern's stream), got ${describe(value)}`);
  }
  return value;
}

/**
 * Refuses to partition a stream whose partition keys would carry a hash tag (`{orders}:eu` →
 * `{orders}:eu:p0`, …): they would all hash to one slot, so one master, which defeats the point.
 */
export function checkPartitionable(option: string, stream: string, count: number): void {
  if (count === 1) return;
  const tag = hashTagOf(partitionStreamKey(stream, 0));
  if (tag === undefined) return;
  throw new RedisStreamsOptionError(
    option,
    `stream "${stream}" carries the hash tag "{${tag}}": all ${count} partitions would hash to one slot (one master); ` +
      `partition a stream name without braces (its partitions are "${stream.replace(/[{}]/g, '')}:p0" …)`,
  );
}

/**
 * Partitions of `stream` that share a hash slot with another (rare for small counts: 16384 slots).
 * Each group is `[slot, keys]`. They are still read and handled correctly (a Cluster reader covers
 * one slot, so they share a reader), they only live on the same master.
 */
export function sharedSlotsOf(stream: string, count: number): [slot: number, keys: string[]][] {
  const bySlot = new Map<number, string[]>();
  for (const key of partitionStreamKeys(stream, count)) {
    const slot = hashSlotOf(key);
    const keys = bySlot.get(slot);
    if (keys) keys.push(key);
    else bySlot.set(slot, [key]);
  }
  return [...bySlot].filter(([, keys]) => keys.length > 1);
}

/** Partitioned stream → its partition count, from the partitions' descriptions (server bindings, handled streams). */
export function partitionedStreamsOf(partitions: Iterable<{ readonly partitionOf: string | undefined; readonly partitions: number }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { partitionOf, partitions: count } of partitions) if (partitionOf !== undefined) counts.set(partitionOf, count);
  return counts;
}
