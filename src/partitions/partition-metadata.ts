import { RedisStreamsPartitionMismatchError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { partitionsMetadataKey } from './partition-keys.js';

/**
 * Records `count` as the partition count of `stream` unless one is recorded already (SET NX), and
 * fails with `RedisStreamsPartitionMismatchError` when the recorded count differs. The SET NX and
 * the GET go out in one round trip (same key, so same slot on a Cluster); the key has no TTL.
 */
export async function checkPartitionCount(client: RedisClient, stream: string, count: number): Promise<void> {
  const key = partitionsMetadataKey(stream);
  const replies = await client.pipeline().set(key, String(count), 'NX').get(key).exec();
  const failed = replies?.find(([error]) => error !== null)?.[0];
  if (failed) throw failed;
  const recorded = Number(replies?.[1]?.[1]);
  if (recorded !== count) throw new RedisStreamsPartitionMismatchError(stream, count, recorded, key);
}

/** The recorded partition count of `stream`, 1 when none is recorded (or it is not a count). */
export async function recordedPartitionCount(client: RedisClient, stream: string): Promise<number> {
  return countOf(await client.get(partitionsMetadataKey(stream)));
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

/** Whether a failed check is the ACL refusing the metadata key (rules written before it existed). */
export function isNoPermission(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOPERM');
}

function countOf(value: string | null): number {
  const count = Number(value);
  return value !== null && Number.isInteger(count) && count >= 1 ? count : 1;
}
