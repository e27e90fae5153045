import type { RedisClient } from '../redis/connection.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import { recordedPartitionCount } from './partition-metadata.js';

/** `orders:p3`: the name a partition key would be partition 3 of. */
const PARTITION_KEY = /^(.+):p(\d+)$/;

/**
 * When `key` is a partition of a partitioned stream (`orders:p3`, and `orders` records more than
 * 3 partitions): that stream and the index; else undefined. One GET of the metadata key, only for
 * a name shaped like a partition's; undefined when the ACL refuses it. For state kept on the
 * partitioned stream's own name (a pause), which written on a partition would do nothing.
 */
export async function partitionedStreamOf(redis: RedisClient, key: string): Promise<{ stream: string; index: number } | undefined> {
  const match = PARTITION_KEY.exec(key);
  if (match === null) return undefined;
  const stream = match[1] as string;
  const index = Number(match[2]);
  return index < (await partitionCountOrOne(redis, stream)) ? { stream, index } : undefined;
}

/** The partition count `key` records; 1 when none, or when the ACL refuses the metadata key. */
export function partitionCountOrOne(redis: RedisClient, key: string): Promise<number> {
  return recordedPartitionCount(redis, key).catch((error: unknown) => (isNoPermission(error) ? 1 : Promise.reject(error)));
}
