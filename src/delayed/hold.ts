import type { RedisClient } from '../redis/connection.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { CronRule } from './cron-rule.js';
import { delayedKeys } from './delayed-keys.js';
import type { DeliveryTime } from './delivery-time.js';
import { delayedScripts } from './scripts/loader.js';
import { delayedWakeChannel } from './wake-channel.js';

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

/** How a held entry recurs: not at all, every `everyMs`, or at the listed occurrences of a cron rule. */
export type Recurrence = { readonly everyMs: number } | { readonly cron: CronRule; readonly occurrences: readonly number[] } | undefined;

/**
 * The start of a hold's arguments (hold.lua: hold id, due time, the promotion's XADD words, the
 * recurrence); the caller appends the entry's field/value pairs, as it would to an XADD.
 */
export function holdHead(holdId: string, time: DeliveryTime, xadd: PromotionXAdd, recurrence?: Recurrence): (string | Buffer)[] {
  const head = [holdId, time.mode, String(time.ms), xadd.noMkStream ? '1' : '0', xadd.trim, xadd.operator, String(xadd.amount), xadd.onlyAcked ? '1' : '0'];
  if (recurrence === undefined) head.push('0');
  else if ('everyMs' in recurrence) head.push(String(recurrence.everyMs));
  else head.push('cron', recurrence.cron.expression, recurrence.cron.timezone, recurrence.occurrences.join(','));
  return head;
}

/**
 * Writes a hold (schedule + body, one script call) for `stream`; resolves with its hold id. A hold
 * that becomes the stream's earliest is announced on its wake-up channel in the same call.
 */
export async function holdEntry(client: RedisClient, stream: string, args: (string | Buffer)[]): Promise<string> {
  const { schedule, bodies, recurring } = delayedKeys(stream);
  batchThisTick(client);
  const [hold] = await delayedScripts(client).nrsDelayedHold(schedule, bodies, recurring, delayedWakeChannel(stream), ...args);
  return String(hold);
}
