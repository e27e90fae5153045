import { RedisStreamsOptionError } from './errors.js';

const STREAM_ID = /^(\d{1,20})-(\d{1,20})$/;
const MAX_ID_PART = 2n ** 64n - 1n;

/** `ms-seq` with both parts unsigned 64-bit integers, as Redis accepts them. */
export function isStreamId(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const parts = STREAM_ID.exec(value);
  return parts !== null && BigInt(parts[1] as string) <= MAX_ID_PART && BigInt(parts[2] as string) <= MAX_ID_PART;
}

/** `value` must be an integer in [min, max]; `undefined` yields `fallback`. */
export function integerOption(
  option: string,
  value: unknown,
  fallback: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new RedisStreamsOptionError(option, `must be an integer, got ${describe(value)}`);
  }
  if (value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
    throw new RedisStreamsOptionError(option, `must be ${range}, got ${value}`);
  }
  return value;
}

/**
 * The longest delay Node.js timers take: 2^31 - 1 ms (~24.8 days). A longer one is not an error
 * in Node, it fires after 1 ms, so every option that ends in a timer is bounded by this.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** Rejects `millis` when it exceeds what a Node.js timer can wait. */
export function checkTimerMillis(option: string, millis: number): number {
  if (millis > MAX_TIMER_MS) {
    throw new RedisStreamsOptionError(option, `must be at most ${MAX_TIMER_MS} ms (~24.8 days, the longest Node.js timer), got ${millis}`);
  }
  return millis;
}

/** A delay in ms that ends in a timer: an integer in [min, MAX_TIMER_MS]; `undefined` yields `fallback`. */
export function timerMillisOption(option: string, value: unknown, fallback: number, min: number): number {
  return checkTimerMillis(option, integerOption(option, value, fallback, min));
}

export function nonEmptyStringOption(option: string, value: unknown, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string' || value.length === 0) {
    throw new RedisStreamsOptionError(option, `must be a non-empty string, got ${describe(value)}`);
  }
  return value;
}

export function booleanOption(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new RedisStreamsOptionError(option, `must be true or false, got ${describe(value)}`);
  }
  return value;
}

/** A stream id, or one of the `extra` special ids (such as `$` or `0`). */
export function streamIdOption(option: string, value: unknown, fallback: string, extra: readonly string[] = []): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (extra.includes(value) || isStreamId(value))) return value;
  const allowed = [...extra.map((e) => `"${e}"`), 'a stream id such as 1700000000000-0'].join(', ');
  throw new RedisStreamsOptionError(option, `must be ${allowed}; got ${describe(value)}`);
}

/** A value as an error message shows what it got: the value itself when short and plain, else its kind. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof Date) return 'a Date';
  if (typeof value === 'function') return 'a function';
  return typeof value === 'object' ? 'an object' : typeof value;
}
