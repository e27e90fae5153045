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
  const value = await client.get(partitionsMetadataKey(stream));
  const count = Number(value);
  return value !== null && Number.isInteger(count) && count >= 1 ? count : 1;
}
