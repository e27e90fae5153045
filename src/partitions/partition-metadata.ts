import { RedisStreamsPartitionMetadataError, RedisStreamsPartitionMismatchError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { MAX_PARTITIONS, partitionsMetadataKey } from './partition-keys.js';

/**
 * Records `count` as the partition count of `stream` unless one is recorded already (SET NX), and
 * fails with `RedisStreamsPartitionMismatchError` when the recorded count differs. The SET NX and
 * the GET go out in one round trip (same key, so same slot on a Cluster); the key has no TTL.
 */
export async function checkPartitionCount(client: RedisClient, stream: string, count: number): Promise<void> {
  const key = partitionsMetadataKey(stream);
  const replies = await client.pipeline().set(key, String(count), 'NX').get(key).exec();
  const failed = replies?.find(([error]) => error !== null)?.[0];
  if (failed) throw wrongType(stream, failed);
  // Deleted between the SET NX and the GET (an operator resetting it): 0, a mismatch, checked again next time.
  const recorded = countOf(stream, replies?.[1]?.[1] as string | null) ?? 0;
  if (recorded !== count) throw new RedisStreamsPartitionMismatchError(stream, count, recorded, key);
}

/**
 * The recorded partition count of `stream`, 1 when none is recorded. Throws
 * `RedisStreamsPartitionMetadataError` when the key holds no count in 1..MAX_PARTITIONS.
 */
export async function recordedPartitionCount(client: RedisClient, stream: string): Promise<number> {
  let value: string | null;
  try {
    value = await client.get(partitionsMetadataKey(stream));
  } catch (error) {
    throw wrongType(stream, error);
  }
  return countOf(stream, value) ?? 1;
}

/**
 * A side that does not partition `stream`: one GET of the metadata key (nothing written, so an
 * unpartitioned stream stays without one). Fails with `RedisStreamsPartitionMismatchError` when the
 * other side partitioned it: this side would use `orders`, which nobody reads or writes there.
 */
export async function checkUnpartitioned(client: RedisClient, stream: string): Promise<void> {
  const recorded = await recordedPartitionCount(client, stream);
  if (recorded > 1) throw new RedisStreamsPartitionMismatchError(stream, 1, recorded, partitionsMetadataKey(stream));
}


/**
 * The one reading of a metadata key's value: `undefined` when there is none, the count when it is
 * one in 1..MAX_PARTITIONS (what `checkPartitionCount` writes), else `RedisStreamsPartitionMetadataError`
 * naming the key. Every reader (client, server, services, CLI) goes through here, so a count that
 * would make millions of partition keys never reaches `partitionStreamKeys`.
 */
function countOf(stream: string, value: string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const invalid = (reason: string) => new RedisStreamsPartitionMetadataError(stream, partitionsMetadataKey(stream), value, reason);
  if (!/^-?\d+$/.test(value)) throw invalid(`${shortened(value, JSON.stringify)} is not a partition count (an integer from 1 to ${MAX_PARTITIONS})`);
  const count = Number(value);
  if (count < 1 || count > MAX_PARTITIONS) throw invalid(`count ${shortened(value)} is outside 1..${MAX_PARTITIONS}`);
  return count;
}

/** A WRONGTYPE reply (the key is a hash, a list, …) as invalid metadata; any other error as it is. */
function wrongType(stream: string, error: unknown): unknown {
  if (!(error instanceof Error) || !error.message.startsWith('WRONGTYPE')) return error;
  return new RedisStreamsPartitionMetadataError(stream, partitionsMetadataKey(stream), undefined, 'it holds no string value (WRONGTYPE)');
}

/** A value as shown in an error (`show` quotes it): at most 40 characters of it. */
function shortened(value: string, show: (text: string) => string = (text) => text): string {
  return value.length <= 40 ? show(value) : `${show(value.slice(0, 40))}… (${value.length} characters)`;
}
