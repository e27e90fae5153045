import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { AckDeletePolicy } from './ack-policy.js';

/**
 * `XACKDEL stream group <policy> IDS n id…` (Redis 8.2+): acknowledges and deletes in one command.
 * Per id it answers 1 (acked, deleted), 2 (acked, kept: ACKED and another group still needs it)
 * or -1 (not pending in the group). A missing group is no NOGROUP error but -1 for every id:
 * `true` is returned when that is the case (the group is gone), so the caller can recreate it.
 */
export async function ackAndDelete(
  client: RedisClient,
  stream: string,
  group: string,
  policy: AckDeletePolicy,
  ids: readonly string[],
): Promise<{ groupMissing: boolean }> {
  batchThisTick(client);
  const replies = (await client.call('XACKDEL', stream, group, policy, 'IDS', String(ids.length), ...ids)) as number[];
  return { groupMissing: await xackdelMissedGroup(client, stream, group, replies) };
}

/** Whether XACKDEL's replies (-1 for some id) come from a missing group rather than ids no longer pending. */
export async function xackdelMissedGroup(client: RedisClient, stream: string, group: string, replies: unknown): Promise<boolean> {
  if (!Array.isArray(replies) || !replies.some((reply) => Number(reply) === -1)) return false;
  // -1 also means "no longer pending" (claimed and acked by another consumer): ask whether the group is there.
  return !(await groupExists(client, stream, group));
}

async function groupExists(client: RedisClient, stream: string, group: string): Promise<boolean> {
  let groups: unknown[];
  try {
    groups = (await client.call('XINFO', 'GROUPS', stream)) as unknown[];
  } catch (error) {
    if (/no such key/i.test((error as Error).message)) return false;
    throw error;
  }
  return groups.some((fields) => {
    // RESP2: a flat field list; RESP3: a map (ioredis may give an object or a flat list).
    if (Array.isArray(fields)) {
      const index = fields.findIndex((value, i) => i % 2 === 0 && String(value) === 'name');
      return index >= 0 && String(fields[index + 1]) === group;
    }
    return fields !== null && typeof fields === 'object' && String((fields as Record<string, unknown>).name) === group;
  });
}
