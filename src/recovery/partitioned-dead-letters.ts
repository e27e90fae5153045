import { RedisStreamsPartitionedStreamError } from '../errors.js';
import { partitionStreamKey, partitionStreamKeys } from '../partitions/partition-keys.js';
import { recordedPartitionCount } from '../partitions/partition-metadata.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import { mergeById } from '../partitions/merge-by-id.js';
import type { RedisClient } from '../redis/connection.js';

/**
 * Dead letters of a partitioned stream (`orders` → `orders:p0` …, each with its own dead-letter
 * stream): `DeadLetterService` asks here whether the stream it was given is partitioned, and
 * merges what it did per partition into one answer.
 */

/**
 * The partition keys of `stream` when its metadata key records a partition count, else
 * `undefined` (one GET; an ACL without it reads as "not partitioned"). An explicit
 * `deadLetterKey` names one dead-letter stream: never aggregated.
 */
export async function partitionsToAggregate(client: RedisClient, stream: string, explicitKey: string | undefined): Promise<string[] | undefined> {
  if (explicitKey !== undefined) return undefined;
  const count = await recordedPartitionCount(client, stream).catch((error: unknown) => {
    if (isNoPermission(error)) return 1;
    throw error;
  });
  return count > 1 ? partitionStreamKeys(stream, count) : undefined;
}

/** A dead letter id belongs to one partition's dead-letter stream: by-id operations need its key. */
export function needsOnePartition(stream: string, partitionKeys: readonly string[], operation: string): RedisStreamsPartitionedStreamError {
  return new RedisStreamsPartitionedStreamError(stream, partitionKeys, operation);
}

/** `{orders:p*}:dead`: the dead-letter keys of every partition at once, as the ACL rules write them. */
export function deadLetterKeyGlob(stream: string, keyOf: (stream: string) => string): string {
  return keyOf(partitionStreamKey(stream, '*'));
}

/** One partition's page: its dead letters of that partition and how the raw read ended. */
export interface PartitionPage<L extends { deadLetterId: string }> {
  deadLetters: L[];
  /** The read returned `count` rows: more may follow. */
  full: boolean;
  /** Id of the last row read (filtered or not); `undefined` when none. */
  lastRowId: string | undefined;
}

/**
 * One page over every partition: each partition read from the same `start` with the same `count`,
 * merged in id order and cut to `count` (never between equal ids). `nextStart` continues after
 * the last one shown, or after the lowest last row of a full partition when nothing was shown.
 */
export function mergePages<L extends { deadLetterId: string }>(pages: readonly PartitionPage<L>[], count: number): { deadLetters: L[]; nextStart: string | null } {
  const { items, more } = mergeById(
    pages.map((page) => page.deadLetters),
    (letter) => letter.deadLetterId,
    count,
  );
  const anyFull = pages.some((page) => page.full);
  if (!more && !anyFull) return { deadLetters: items, nextStart: null };
  const last = items.at(-1)?.deadLetterId;
  if (last !== undefined) return { deadLetters: items, nextStart: `(${last}` };
  const lowest = mergeById(
    pages.filter((page) => page.full && page.lastRowId !== undefined).map((page) => [page.lastRowId as string]),
    (id) => id,
    1,
  ).items[0];
  return { deadLetters: items, nextStart: lowest === undefined ? null : `(${lowest}` };
}

/** `work` on each partition, one after the other (each `'all'` is a snapshot of its own dead-letter stream). */
export async function eachPartition<R>(partitions: readonly string[], work: (partition: string) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const partition of partitions) results.push(await work(partition));
  return results;
}
