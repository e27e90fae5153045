import { partitionStreamKeys } from '../partitions/partition-keys.js';
import { recordedPartitionCount } from '../partitions/partition-metadata.js';
import { priorityLanesOption, priorityStreamKeys } from '../priorities/priority-lanes.js';
import type { RedisClient } from '../redis/connection.js';
import type { EntryStreams } from './entry-status.js';

/**
 * The keys an entry of `stream` may be in, for a caller that knows no routing (the CLI): the
 * lanes given (`high,normal,low`), else the partitions its metadata key records, else the stream.
 */
export async function entryStreamsOf(client: RedisClient, stream: string, lanes: string | undefined): Promise<EntryStreams> {
  if (lanes !== undefined) {
    const names = priorityLanesOption('lanes', lanes.split(',').map((lane) => lane.trim()));
    return { stream, keys: priorityStreamKeys(stream, names as readonly string[]) };
  }
  return { stream, keys: partitionStreamKeys(stream, await recordedPartitionCount(client, stream)) };
}
