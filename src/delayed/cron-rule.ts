import { Cron } from 'croner';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/**
 * A cron expression and the time zone it is read in (docs/scheduling.md "Cron expressions"),
 * evaluated by croner. The zone is always explicit (UTC unless given): a producer and the
 * workers that compute later occurrences may run in different zones.
 */
export interface CronRule {
  readonly expression: string;
  readonly timezone: string;
}

/**
 * Occurrences a hold carries ahead (promote.lua pops them; the workers add more). With fewer than
 * {@link CRON_REFILL_BELOW} left, a promotion asks its worker for the next ones.
 */
export const CRON_OCCURRENCES = 32;
export const CRON_REFILL_BELOW = 16;
/** Occurrences are computed from this long before the producer's clock, for producers behind Redis' clock; the hold script drops the past ones. */
export const CRON_CLOCK_MARGIN_MS = 60_000;

const cache = new Map<string, Cron>();

/** Validates `expression` and `timezone` (naming `repeat.cron` / `repeat.timezone`): it must parse and have an occurrence. */
export function cronRule(expression: unknown, timezone: unknown = 'UTC'): CronRule {
  if (typeof expression !== 'string' || expression.trim() === '') {
    throw new RedisStreamsOptionError('repeat.cron', `must be a cron expression such as '0 2 * * *', got ${describe(expression)}`);
  }
  if (typeof timezone !== 'string' || timezone === '' || !validTimezone(timezone)) {
    throw new RedisStreamsOptionError('repeat.timezone', `must be an IANA time zone such as 'Europe/Berlin' or 'UTC', got ${describe(timezone)}`);
  }
  const rule = { expression: expression.trim(), timezone };
  let cron: Cron;
  try {
    cron = cronOf(rule);
  } catch (error) {
    throw new RedisStreamsOptionError('repeat.cron', `is not a valid cron expression: ${(error as Error).message}`);
  }
  if (cron.nextRun() === null) throw new RedisStreamsOptionError('repeat.cron', `'${rule.expression}' has no future occurrence`);
  return rule;
}

/** The next `count` occurrences strictly after `afterMs` (Unix ms), ascending; fewer when the rule ends. */
export function occurrencesAfter(rule: CronRule, afterMs: number, count: number): number[] {
  return cronOf(rule)
    .nextRuns(count, new Date(afterMs))
    .map((date) => date.getTime());
}

/**
 * A hold's first list of occurrences, computed on the producer's clock from {@link
 * CRON_CLOCK_MARGIN_MS} before it, and long enough that {@link CRON_OCCURRENCES} remain after a
 * margin past it (a rule firing every second would otherwise arrive with its list all past).
 */
export function firstOccurrences(rule: CronRule, nowMs: number): number[] {
  const times = occurrencesAfter(rule, nowMs - CRON_CLOCK_MARGIN_MS, CRON_OCCURRENCES);
  const horizon = nowMs + CRON_CLOCK_MARGIN_MS;
  const ahead = times.filter((time) => time > horizon).length;
  if (ahead >= CRON_OCCURRENCES || times.length < CRON_OCCURRENCES) return times;
  const last = times[times.length - 1] as number;
  return [...times, ...occurrencesAfter(rule, last, CRON_OCCURRENCES - ahead)];
}

function cronOf(rule: CronRule): Cron {
  const key = `${rule.timezone}\u0000${rule.expression}`;
  let cron = cache.get(key);
  if (cron === undefined) {
    // No function: croner starts no timer, it only evaluates.
    cron = new Cron(rule.expression, { timezone: rule.timezone });
    if (cache.size >= 1_000) cache.delete(cache.keys().next().value as string);
    cache.set(key, cron);
  }
  return cron;
}

function validTimezone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}
