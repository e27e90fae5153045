import { pausedGroupsOf } from '../flow/pause-state.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import type { RedisClient } from '../redis/connection.js';

/**
 * The paused groups of `key` (group → ms of Redis' clock since), one HGETALL of `{key}:paused`:
 * for a partitioned stream, of its own name, which covers every partition. Empty when the ACL
 * refuses the key (an operator's rules from before pauses): the rest of `info` and `top` shows.
 */
export function pausedGroupsOrNone(redis: RedisClient, key: string): Promise<Map<string, number>> {
  return pausedGroupsOf(redis, key).catch((error: unknown) =>
    isNoPermission(error) ? new Map<string, number>() : Promise.reject(error),
  );
}
