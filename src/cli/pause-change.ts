import { pauseGroup, pausedSince, resumeGroup } from '../flow/pause-state.js';
import { partitionCountOrOne, partitionedStreamOf } from '../partitions/partition-of-key.js';
import type { RedisClient } from '../redis/connection.js';
import { redisNow } from '../redis/server-time.js';
import { CliError } from './errors.js';

/** What `pause` / `resume` did to one stream's group (printed as is with `--json`). */
export interface PauseChange {
  key: string;
  group: string;
  /** The state after the command. */
  paused: boolean;
  /** False when the group already was in that state (the command changed nothing). */
  changed: boolean;
  /** When the pause began (Redis' clock, ISO-8601): the pause now in force, or the one just lifted; null when none. */
  pausedAt: string | null;
  /** How long it has lasted, or lasted, up to Redis' TIME now; null when there was no pause. */
  pausedForMs: number | null;
  /** A partitioned stream: its partition count (one pause covers every partition). */
  partitions?: number;
}

/**
 * Pauses or resumes `group` on `key` (docs/cli.md "Pause and resume"), then says what changed.
 * A partition's key is refused: workers watch the partitioned stream's own state (one pause for
 * every partition), so a pause written on `orders:p3` would stop nothing.
 */
export async function changePause(redis: RedisClient, key: string, group: string, pause: boolean): Promise<PauseChange> {
  await refusePartitionKey(redis, key);
  const partitions = await partitionCountOrOne(redis, key);
  const before = pause ? undefined : await pausedSince(redis, key, group);
  const changed = pause ? await pauseGroup(redis, key, group) : await resumeGroup(redis, key, group);
  // After a pause (new or not), the pause in force; after a resume, the one lifted (if this run lifted it).
  const since = pause ? await pausedSince(redis, key, group) : changed ? before : undefined;
  const now = await redisNow(redis);
  const change: PauseChange = {
    key,
    group,
    paused: pause,
    changed,
    pausedAt: since === undefined ? null : new Date(since).toISOString(),
    pausedForMs: since === undefined ? null : Math.max(0, now - since),
  };
  return partitions > 1 ? { ...change, partitions } : change;
}

async function refusePartitionKey(redis: RedisClient, key: string): Promise<void> {
  const partition = await partitionedStreamOf(redis, key);
  if (partition === undefined) return;
  throw new CliError(`invalid <key>: ${key} is partition ${partition.index} of ${partition.stream}; name ${partition.stream}: one pause covers every partition`, 2);
}
