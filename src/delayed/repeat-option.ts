import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/** A recurring emit (`RedisStreamsRecord` option `repeat`, docs/scheduling.md). */
export interface RepeatOptions {
  /** Time between occurrences: ms or ISO-8601 (`PT1H`), at least 10 ms. */
  every: number | string;
  /**
   * Names the recurring entry (its hold id is `repeat:<key>`): emitting it again under the same
   * key (every start-up of the app) replaces its body and keeps its schedule, adding nothing;
   * `delayed remove <stream> repeat:<key>` stops it.
   */
  key: string;
}

export interface ResolvedRepeat {
  readonly everyMs: number;
  readonly holdId: string;
}

/** Shorter periods would keep every worker promoting in a tight loop. */
export const MIN_REPEAT_MS = 10;

export function resolveRepeat(value: unknown): ResolvedRepeat | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('repeat', `must be { every, key }, got ${describe(value)}`);
  }
  const { every, key, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`repeat.${unknown}`, 'is not a repeat option (every, key)');
  const everyMs = durationMillisOption('repeat.every', every);
  if (everyMs < MIN_REPEAT_MS) throw new RedisStreamsOptionError('repeat.every', `must be at least ${MIN_REPEAT_MS} ms, got ${everyMs} ms`);
  if (typeof key !== 'string' || key === '') throw new RedisStreamsOptionError('repeat.key', `must be a non-empty string, got ${describe(key)}`);
  return { everyMs, holdId: `repeat:${key}` };
}
