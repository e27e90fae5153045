import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';
import { cronRule, type CronRule } from './cron-rule.js';

/** A recurring emit (`RedisStreamsRecord` option `repeat`, docs/scheduling.md): a fixed period or a cron expression. */
export type RepeatOptions = EveryRepeat | CronRepeat;

interface RepeatKey {
  /**
   * Names the recurring entry (its hold id is `repeat:<key>`): emitting it again under the same
   * key (every start-up of the app) replaces its body and keeps its schedule, adding nothing;
   * `delayed remove <stream> repeat:<key>` or `RedisStreamsScheduler.remove` stops it.
   */
  key: string;
}

export interface EveryRepeat extends RepeatKey {
  /** Time between occurrences: ms or ISO-8601 (`PT1H`), at least 10 ms. */
  every: number | string;
  cron?: never;
  timezone?: never;
}

export interface CronRepeat extends RepeatKey {
  /** A cron expression (5 fields, or 6 with seconds first; `L`, `W`, `#`, `@daily` … as croner reads them). */
  cron: string;
  /** The IANA time zone the expression is read in: `'UTC'` (default), `'Europe/Berlin'`. */
  timezone?: string;
  every?: never;
}

export type ResolvedRepeat = { readonly holdId: string } & ({ readonly everyMs: number; readonly cron?: undefined } | { readonly cron: CronRule; readonly everyMs?: undefined });

/** Shorter periods would keep every worker promoting in a tight loop. */
export const MIN_REPEAT_MS = 10;

/** The hold id of the recurring entry named `key`. */
export function repeatHoldId(key: string): string {
  return `repeat:${key}`;
}

export function resolveRepeat(value: unknown): ResolvedRepeat | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('repeat', `must be { every, key } or { cron, timezone?, key }, got ${describe(value)}`);
  }
  const { every, cron, timezone, key, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`repeat.${unknown}`, 'is not a repeat option (every, cron, timezone, key)');
  if (typeof key !== 'string' || key === '') throw new RedisStreamsOptionError('repeat.key', `must be a non-empty string, got ${describe(key)}`);
  if (every !== undefined && cron !== undefined) throw new RedisStreamsOptionError('repeat.cron', 'give either every or cron, not both');
  if (cron !== undefined) return { holdId: repeatHoldId(key), cron: cronRule(cron, timezone ?? 'UTC') };
  if (timezone !== undefined) throw new RedisStreamsOptionError('repeat.timezone', 'applies to a cron expression (repeat.cron) only');
  if (every === undefined) throw new RedisStreamsOptionError('repeat.every', 'is required (or repeat.cron): ms or an ISO-8601 duration such as PT1H');
  const everyMs = durationMillisOption('repeat.every', every);
  if (everyMs < MIN_REPEAT_MS) throw new RedisStreamsOptionError('repeat.every', `must be at least ${MIN_REPEAT_MS} ms, got ${everyMs} ms`);
  return { holdId: repeatHoldId(key), everyMs };
}
