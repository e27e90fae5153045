import type { RedisClient } from '../../redis/connection.js';
import { RedisStreamsClaimError } from '../../claim/claim.errors.js';
import { StreamInspector } from '../../claim/stream-inspector.js';
import { deadLetterKey } from '../../redis/keys.js';
import { partitionedSamples } from './partitioned-sample.js';
import type { GroupSample, StreamSample, TopSample } from './top-sample.js';

export type { GroupSample, StreamSample, TopSample } from './top-sample.js';

/**
 * One snapshot of the chosen streams (and groups: all of a stream's groups when `groups` is
 * empty). Every command goes out at once on the one connection; the answers are read together.
 */
export async function sampleStreams(
  redis: RedisClient,
  keys: readonly string[],
  groups: readonly string[],
  deadLetterKeyOf: (stream: string) => string = deadLetterKey,
): Promise<TopSample> {
  const at = Date.now();
  const inspector = new StreamInspector(redis);
  const streams = await Promise.all(
    keys.map(async (key) => {
      const sample = await sampleStream(inspector, redis, key, groups, deadLetterKeyOf);
      // A partitioned stream has no key of its own: its partitions, and their total.
      if (sample.partitionKeys === undefined) return [sample];
      const partitions = await Promise.all(sample.partitionKeys.map((partition) => sampleStream(inspector, redis, partition, groups, deadLetterKeyOf)));
      return partitionedSamples(key, partitions);
    }),
  );
  return { at, streams: streams.flat() };
}

async function sampleStream(
  inspector: StreamInspector,
  redis: RedisClient,
  key: string,
  wanted: readonly string[],
  deadLetterKeyOf: (stream: string) => string,
): Promise<StreamSample> {
  const deadLetters = redis.xlen(deadLetterKeyOf(key));
  let stream;
  let groups;
  try {
    [stream, groups] = await Promise.all([inspector.stream(key), inspector.groups(key)]);
  } catch (error) {
    if (error instanceof RedisStreamsClaimError && error.reason === 'missing-stream') {
      const missing: StreamSample = { key, exists: false, length: 0, entriesAdded: null, deadLetters: await deadLetters, groups: [] };
      return error.partitionKeys === undefined ? missing : { ...missing, partitionKeys: error.partitionKeys };
    }
    throw error;
  }
  const chosen = wanted.length === 0 ? groups : wanted.map((name) => groups.find((group) => group.name === name) ?? name);
  const samples = await Promise.all(
    chosen.map(async (group): Promise<GroupSample> => {
      if (typeof group === 'string') {
        return { name: group, consumers: 0, pending: 0, lag: null, entriesRead: null, oldestPendingIdleMs: null, missing: true };
      }
      const oldest = group.pending === 0 ? [] : await inspector.pendingRange(key, group.name, { count: 1 });
      return {
        name: group.name,
        consumers: group.consumers,
        pending: group.pending,
        lag: group.lag,
        entriesRead: group.entriesRead,
        oldestPendingIdleMs: oldest[0]?.idleMs ?? null,
      };
    }),
  );
  return { key, exists: true, length: stream.length, entriesAdded: stream.entriesAdded, deadLetters: await deadLetters, groups: samples };
}
