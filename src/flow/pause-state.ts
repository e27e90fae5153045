import type { RedisClient } from '../redis/connection.js';
import { redisNow } from '../redis/server-time.js';
import { pausedKey } from './flow-keys.js';

/**
 * Pausing a stream's group for every worker at once. The state lives in Redis (`{stream}:paused`,
 * group → when it was paused, ms of Redis' clock), so it survives restarts of workers and of Redis
 * (with persistence). Workers watch it (pause-watch.ts) and stop reading new entries; handlers
 * already running finish and nothing is lost. `stream` is the pattern's stream: for a partitioned
 * pattern the stream its partitions are named after (one pause covers them all).
 */

/** Pauses `group` on `stream`. Resolves `true` when it was running, `false` when it was paused already. */
export async function pauseGroup(redis: RedisClient, stream: string, group: string): Promise<boolean> {
  const since = await redisNow(redis);
  return Number(await redis.hsetnx(pausedKey(stream), group, String(since))) === 1;
}

/** Resumes `group` on `stream`. Resolves `true` when it was paused. */
export async function resumeGroup(redis: RedisClient, stream: string, group: string): Promise<boolean> {
  return Number(await redis.hdel(pausedKey(stream), group)) === 1;
}

/** The paused groups of `stream`, each with when it was paused (ms of Redis' clock). */
export async function pausedGroupsOf(redis: RedisClient, stream: string): Promise<Map<string, number>> {
  const reply = (await redis.hgetall(pausedKey(stream))) as Record<string, string>;
  return new Map(Object.entries(reply).map(([group, since]) => [group, Number(since)]));
}

/** When `group` on `stream` was paused (ms of Redis' clock), or `undefined` when it runs. */
export async function pausedSince(redis: RedisClient, stream: string, group: string): Promise<number | undefined> {
  const since = await redis.hget(pausedKey(stream), group);
  return since === null ? undefined : Number(since);
}
