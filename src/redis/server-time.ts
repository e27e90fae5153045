import type { RedisClient } from './connection.js';

/** A TIME reply (`[seconds, microseconds]`, as strings or numbers) in ms on Redis' clock. */
export function timeReplyMs(reply: readonly (string | number)[]): number {
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}

/** Redis' clock in ms (TIME): the clock delayed entries are scored on and idle times count on, whatever the hosts' clocks say. */
export async function redisNow(client: RedisClient): Promise<number> {
  return timeReplyMs((await client.time()) as [number | string, number | string]);
}
