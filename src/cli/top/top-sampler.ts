import type { RedisClient } from '../../redis/connection.js';
import { isNoPermission } from '../../redis/acl-refusal.js';
import { RedisStreamsClaimError } from '../../claim/claim.errors.js';
import { StreamInspector } from '../../claim/stream-inspector.js';
import { countHeldAndDue } from '../../delayed/delayed-inspection.js';
import { redisNow } from '../../redis/server-time.js';
import { batchThisTick } from '../../redis/tick-batching.js';
import { deadLetterKey } from '../../redis/keys.js';
import { pausedGroupsOrNone } from '../paused-groups.js';
import { partitionedSamples } from './partitioned-sample.js';
import type { GroupSample, StreamSample, TopSample } from './top-sample.js';

export type { DelayedSample, GroupSample, StreamSample, TopSample } from './top-sample.js';

/**
 * One snapshot of the chosen streams (and groups: all of a stream's groups when `groups` is
 * empty), on the one connection. One TIME a sample (due times are on Redis' clock), sent with
 * each stream key's HGETALL of its pause state; once TIME answered, per stream key XINFO STREAM,
 * XINFO GROUPS, XLEN of its dead letters, ZCARD and ZCOUNT of its delayed schedule in one write
 * (`stateOfOneMoment`), then XPENDING (one entry) per group with pending entries. A partitioned
 * stream's pause state is read once, on its own name, for all its partitions.
 */
export async function sampleStreams(
  redis: RedisClient,
  keys: readonly string[],
  groups: readonly string[],
  deadLetterKeyOf: (stream: string) => string = deadLetterKey,
): Promise<TopSample> {
  const at = Date.now();
  const inspector = new StreamInspector(redis);
  const now = redisNow(redis).catch(nullWhenRefused);
  // Awaited by every stream's reads; handled here too, for a sample that fails before it gets there.
  now.catch(() => undefined);
  const streams = await Promise.all(
    keys.map(async (key) => {
      const paused = pausedNames(redis, key);
      paused.catch(() => undefined);
      const sample = await sampleStream(inspector, redis, key, groups, deadLetterKeyOf, now, paused);
      // A partitioned stream has no key of its own: its partitions, and their total.
      if (sample.partitionKeys === undefined) return [sample];
      const partitions = await Promise.all(sample.partitionKeys.map((partition) => sampleStream(inspector, redis, partition, groups, deadLetterKeyOf, now, paused)));
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
  now: Promise<number | null>,
  paused: Promise<ReadonlySet<string>>,
): Promise<StreamSample> {
  const { deadLetters, delayed, streamAndGroups } = stateOfOneMoment(inspector, redis, key, deadLetterKeyOf(key), await now);
  let stream;
  let groups;
  try {
    [stream, groups] = await streamAndGroups;
  } catch (error) {
    if (error instanceof RedisStreamsClaimError && error.reason === 'missing-stream') {
      const missing: StreamSample = { key, exists: false, length: 0, entriesAdded: null, deadLetters: await deadLetters, delayed: await delayed, groups: [], pausedGroups: await paused };
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
  return { key, exists: true, length: stream.length, entriesAdded: stream.entriesAdded, deadLetters: await deadLetters, delayed: await delayed, groups: samples, pausedGroups: await paused };
}

/** The names of the groups paused on `key`. */
async function pausedNames(redis: RedisClient, key: string): Promise<ReadonlySet<string>> {
  return new Set((await pausedGroupsOrNone(redis, key)).keys());
}

/**
 * The stream (XINFO STREAM, XINFO GROUPS), its dead letters' length and its delayed counts (ZCARD
 * and ZCOUNT up to `nowMs`: counts only, however many entries are held), sent in one socket
 * write: Redis runs what one read of a connection brings back to back, so a promotion (held
 * entries into the stream) or a dead-letter move (pending into the dead letters) runs before or
 * after them all. Read apart (the counts waited for TIME's answer, the XINFO reads did not), a
 * promotion in between showed its entries neither in LENGTH nor in DELAYED for a frame. Held
 * entries may exist before their stream does (the promotion creates it): counted either way. A
 * Cluster connection has no one socket: its reads go out as before, each on its own.
 */
function stateOfOneMoment(inspector: StreamInspector, redis: RedisClient, key: string, deadLetterKey: string, nowMs: number | null) {
  batchThisTick(redis);
  const deadLetters = redis.xlen(deadLetterKey);
  const delayed = nowMs === null ? Promise.resolve(null) : countHeldAndDue(redis, key, nowMs).catch(nullWhenRefused);
  const streamAndGroups = Promise.all([inspector.stream(key), inspector.groups(key)]);
  // Awaited after the XINFO reads, which may fail first.
  deadLetters.catch(() => undefined);
  delayed.catch(() => undefined);
  return { deadLetters, delayed, streamAndGroups };
}

/** Null for what the ACL refuses (the delayed keys, TIME), as `info` leaves them out: the rest of the row shows. */
function nullWhenRefused(error: unknown): null {
  if (isNoPermission(error)) return null;
  throw error;
}
