import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/**
 * When a delayed entry is due: `in` ms from now (on Redis' clock, added by the hold script), or
 * `at` a Unix time in ms.
 */
export type DeliveryTime = { readonly mode: 'in' | 'at'; readonly ms: number };

/**
 * The delivery time of a record's `delay` (ms or an ISO-8601 duration, ≥ 1 ms) or `deliverAt`
 * (a `Date` or Unix ms; a time in the past is due at once); `undefined` when it has neither.
 * Both, or a bad value, is a `RedisStreamsOptionError` naming the option.
 */
export function deliveryTimeOf(delay: unknown, deliverAt: unknown): DeliveryTime | undefined {
  if (delay === undefined && deliverAt === undefined) return undefined;
  if (delay !== undefined && deliverAt !== undefined) {
    throw new RedisStreamsOptionError('delay', 'give either delay or deliverAt, not both');
  }
  if (delay !== undefined) return { mode: 'in', ms: durationMillisOption('delay', delay) };
  const at = deliverAt instanceof Date ? deliverAt.getTime() : deliverAt;
  if (typeof at !== 'number' || !Number.isFinite(at) || at < 0) {
    throw new RedisStreamsOptionError('deliverAt', `must be a valid Date or a Unix time in ms, got ${describe(deliverAt)}`);
  }
  return { mode: 'at', ms: Math.trunc(at) };
}
