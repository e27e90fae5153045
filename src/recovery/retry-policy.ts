import { timerDurationOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe, MAX_TIMER_MS } from '../validation.js';

/** The same wait after every failed delivery. */
export interface FixedRetryPolicy {
  type: 'fixed';
  /** ms or ISO-8601 (`PT5S`), at most 2^31-1 ms. */
  delay: number | string;
}

/** `min(max, base × factor^(deliveries − 1))`, minus up to `jitter` of it at random. */
export interface ExponentialRetryPolicy {
  type: 'exponential';
  /** Wait after the first failed delivery: ms or ISO-8601, at most 2^31-1 ms. */
  base: number | string;
  /** Growth per delivery, ≥ 1. Default 2. */
  factor?: number;
  /** Cap of the wait: ms or ISO-8601, ≥ base. Default 2^31-1 ms (~24.8 days). */
  max?: number | string;
  /** Fraction of the wait (0..1) taken off at random, so entries failing together spread out. Default 0. */
  jitter?: number;
}

/**
 * Wait in ms before the next delivery of an entry whose handler failed on its `deliveryCount`-th
 * delivery with `error`. Called once per failure, in the worker that saw it.
 */
export type RetryDelayFunction = (deliveryCount: number, error: unknown) => number;

/**
 * Backoff between deliveries of a failed entry (`recovery.retry`, `extras.retry`). `false` (per
 * handler): no backoff for that handler, whatever the server says.
 */
export type RetryPolicy = FixedRetryPolicy | ExponentialRetryPolicy | RetryDelayFunction;

/** A validated policy. */
export interface ResolvedRetryPolicy {
  /**
   * The wait before the next delivery after a failure, in whole ms (0..2^31-1). Throws when a
   * function policy returns something that is not a number of ms ≥ 0.
   */
  delayFor(deliveryCount: number, error: unknown): number;
  /** The shortest wait this policy gives (a function policy: unknown, `undefined`); recovery ticks fast enough for it. */
  readonly shortest: number | undefined;
}


/**
 * Validates a retry policy, naming the option (`recovery.retry.base`,
 * `extras.retry.base (handler "orders")`: `where` is appended). `undefined` (and `false`,
 * `'none'`) mean no policy.
 */
export function resolveRetryPolicy(retryOption: string, value: unknown, where = ''): ResolvedRetryPolicy | undefined {
  const option = `${retryOption}${where}`;
  if (value === undefined || value === false || value === 'none') return undefined;
  if (typeof value === 'function') return functionPolicy(option, value as RetryDelayFunction);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(
      option,
      `must be { type: 'fixed', delay }, { type: 'exponential', base, factor?, max?, jitter? } or (deliveryCount, error) => ms, got ${describe(value)}`,
    );
  }
  const given = value as Record<string, unknown>;
  const field = (key: string) => `${retryOption}.${key}${where}`;
  if (given.type === 'fixed') {
    onlyKeys(field, given, ['type', 'delay']);
    const delay = timerDurationOption(field('delay'), given.delay);
    return { delayFor: () => delay, shortest: delay };
  }
  if (given.type === 'exponential') {
    onlyKeys(field, given, ['type', 'base', 'factor', 'max', 'jitter']);
    const base = timerDurationOption(field('base'), given.base);
    const factor = numberInRange(field('factor'), given.factor, 2, 1, 1_000);
    const max = given.max === undefined ? MAX_TIMER_MS : timerDurationOption(field('max'), given.max);
    if (max < base) throw new RedisStreamsOptionError(field('max'), `must be at least base (${base} ms), got ${max} ms`);
    const jitter = numberInRange(field('jitter'), given.jitter, 0, 0, 1);
    return {
      delayFor: (deliveryCount) => {
        const wait = Math.min(max, base * factor ** Math.max(0, deliveryCount - 1));
        return Math.floor(wait * (1 - jitter * Math.random()));
      },
      shortest: Math.floor(base * (1 - jitter)),
    };
  }
  throw new RedisStreamsOptionError(field('type'), `must be "fixed" or "exponential", got ${describe(given.type)}`);
}

function functionPolicy(option: string, delay: RetryDelayFunction): ResolvedRetryPolicy {
  return {
    delayFor: (deliveryCount, error) => {
      const wait = delay(deliveryCount, error);
      if (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0) {
        throw new RedisStreamsOptionError(option, `returned ${describe(wait)} for delivery ${deliveryCount}; it must return a number of ms ≥ 0`);
      }
      return Math.min(MAX_TIMER_MS, Math.floor(wait));
    },
    shortest: undefined,
  };
}

function onlyKeys(field: (key: string) => string, given: Record<string, unknown>, known: readonly string[]): void {
  for (const key of Object.keys(given)) {
    if (!known.includes(key)) throw new RedisStreamsOptionError(field(key), `is not an option of a ${String(given.type)} retry policy`);
  }
}

function numberInRange(option: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RedisStreamsOptionError(option, `must be a number between ${min} and ${max}, got ${describe(value)}`);
  }
  return value;
}
