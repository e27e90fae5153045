import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption, isStreamId } from '../validation.js';
import { streamIdListOption } from './recovery-validation.js';

/** Validation of `DeadLetterService` arguments, named after the option (before any command is sent). */

const MAX_LIST_COUNT = 10_000;

function rangeBoundOption(option: string, value: unknown, fallback: '-' | '+'): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string') {
    const id = value.startsWith('(') ? value.slice(1) : value;
    if (value === fallback || isStreamId(id)) return value;
  }
  throw new RedisStreamsOptionError(option, `must be "${fallback}", a stream id or "(" followed by a stream id; got ${describe(value)}`);
}

/** Validated `start`, `end` and `count` of `list` (throws RedisStreamsOptionError naming the option). */
export function resolveListOptions(options: { start?: string; end?: string; count?: number }): { start: string; end: string; count: number } {
  return {
    start: rangeBoundOption('start', options.start, '-'),
    end: rangeBoundOption('end', options.end, '+'),
    count: integerOption('count', options.count, 100, 1, MAX_LIST_COUNT),
  };
}

/** Validated dead-letter ids of `redrive` / `purge` (deduplicated), or `'all'`. */
export function resolveSelection(selection: unknown): readonly string[] | 'all' {
  if (selection === 'all') return 'all';
  if (!Array.isArray(selection)) {
    throw new RedisStreamsOptionError('ids', `must be "all" or an array of dead-letter ids, got ${describe(selection)}`);
  }
  return streamIdListOption('ids', selection);
}
