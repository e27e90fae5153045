import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { delayedKeys } from './delayed-keys.js';
import type { DeliveryTime } from './delivery-time.js';
import { delayedScripts } from './scripts/loader.js';

/** The XADD a promotion runs for a held entry: what the emit itself would have written. */
export interface PromotionXAdd {
  readonly noMkStream: boolean;
  /** `maxAge`: `amount` is the age in ms; the promotion computes `MINID` from Redis' clock then. */
  readonly trim: 'none' | 'maxLen' | 'maxAge';
  readonly operator: '~' | '=';
  /** The `MAXLEN` count or the `maxAge` in ms (0 without trimming). */
  readonly amount: number;
  readonly onlyAcked: boolean;
}

/**
 * The start of a hold's arguments (hold.lua: hold id, due time, the promotion's XADD words, the
 * period of a recurring entry or 0); the caller appends the entry's field/value pairs, as it
 * would to an XADD.
 */
export function holdHead(holdId: string, time: DeliveryTime, xadd: PromotionXAdd, everyMs = 0): (string | Buffer)[] {
  return [holdId, time.mode, String(time.ms), xadd.noMkStream ? '1' : '0', xadd.trim, xadd.operator, String(xadd.amount), xadd.onlyAcked ? '1' : '0', String(everyMs)];
}

/** Writes a hold (schedule + body, one script call) for `stream`; resolves with its hold id. */
export async function holdEntry(client: RedisClient, stream: string, args: (string | Buffer)[]): Promise<string> {
  const { schedule, bodies } = delayedKeys(stream);
  batchThisTick(client);
  const [hold] = await delayedScripts(client).nrsDelayedHold(schedule, bodies, ...args);
  return String(hold);
}
