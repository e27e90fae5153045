import type { RedisClient } from '../../redis/connection.js';
import { RedisStreamsClaimError } from '../../claim/claim.errors.js';
import { StreamInspector } from '../../claim/stream-inspector.js';
import { deadLetterKey } from '../../redis/keys.js';

/** What `top` reads of one group at one moment. */
export interface GroupSample {
  name: string;
  consumers: number;
  pending: number;
  /** Redis 7.0+; null before or when Redis cannot tell. */
  lag: number | null;
  entriesRead: number | null;
  /** Idle time of the lowest pending id (the entry waiting longest for an ack); null when none. */
  oldestPendingIdleMs: number | null;
  /** A group asked for with --group that the stream does not have. */
  missing?: true;
}

export interface StreamSample {
  key: string;
  /** False when the key holds no stream (yet). */
  exists: boolean;
  length: number;
  /** XADDs in the stream's life (Redis 7.0+); null before. */
  entriesAdded: number | null;
  /** Length of the stream's dead-letter stream (default `{<key>}:dead`, or `top --dead-letter-key`). */
  deadLetters: number;
  groups: GroupSample[];
}

export interface TopSample {
  /** Local clock, for rates between two samples. */
  at: number;
  streams: StreamSample[];
}

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
  const streams = await Promise.all(keys.map((key) => sampleStream(new StreamInspector(redis), redis, key, groups, deadLetterKeyOf)));
  return { at, streams };
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
      return { key, exists: false, length: 0, entriesAdded: null, deadLetters: await deadLetters, groups: [] };
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
