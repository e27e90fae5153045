import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption, isStreamId } from '../validation.js';
import { MAX_SCRIPT_BATCH } from './scripts/loader.js';

/** Default number of ids one script call handles. */
export const DEFAULT_SCRIPT_BATCH = 100;

/** A list of stream ids (may be empty); duplicates are dropped, order kept. */
export function streamIdListOption(option: string, value: unknown): string[] {
  if (!Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be an array of stream ids, got ${describe(value)}`);
  }
  for (const id of value) {
    if (!isStreamId(id)) {
      throw new RedisStreamsOptionError(option, `must contain stream ids such as 1700000000000-0, got ${describe(id)}`);
    }
  }
  return [...new Set(value as string[])];
}

/** A list of non-empty names (consumers); duplicates are dropped, order kept. */
export function nameListOption(option: string, value: unknown): string[] {
  if (!Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be an array of names, got ${describe(value)}`);
  }
  for (const name of value) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new RedisStreamsOptionError(option, `must contain non-empty strings, got ${describe(name)}`);
    }
  }
  return [...new Set(value as string[])];
}

export function batchSizeOption(option: string, value: unknown): number {
  return integerOption(option, value, DEFAULT_SCRIPT_BATCH, 1, MAX_SCRIPT_BATCH);
}

/** Milliseconds ≥ 0 (0 turns the check off). */
export function millisecondsOption(option: string, value: unknown, fallback: number): number {
  return integerOption(option, value, fallback, 0);
}
