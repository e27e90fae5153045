import { durationMillisOption, timerDurationOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { booleanOption, describe, integerOption, MAX_TIMER_MS, nonEmptyStringOption } from '../validation.js';
import { deadLetterKeyOption, type DeadLetterKeySetting } from './dead-letter-key-option.js';
import type { DeadLetterNotice } from './recovery-events.js';
import { DEFAULT_RETRY_CONSUMER } from '../claim/retry-record.js';
import { resolveLeasesOption, type LeasesOption } from './lease-options.js';
import { resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicy } from './retry-policy.js';

/**
 * Recovery of one server (the `recovery` server option). Every duration is milliseconds or an
 * ISO-8601 duration (`PT30S`). See docs/recovery.md for what each one bounds.
 */
export interface RecoveryOptions {
  /** Run ticks on a timer. `false`: only `runOnce()` (e.g. from `@nestjs/schedule`). Default `true`. */
  enabled?: boolean;
  /** Entries idle at least this long are taken from their owner. Default 30 s. Per handler: `extras.minIdleTime`. */
  minIdleTime?: number | string;
  /** Time between ticks. Default a quarter of the smallest `minIdleTime` in use (this one or a handler's `extras.minIdleTime`). */
  interval?: number | string;
  /** Deliveries (as Redis counts them) after which an entry is dead-lettered, not run again. Default 5. Per handler: `extras.maxDeliveries`. */
  maxDeliveries?: number;
  /** XPENDING rows per page. Default 100 (1..10000). */
  pageSize?: number;
  /** Pages one tick may scan per stream. Default 10 (1..1000). */
  maxPages?: number;
  /**
   * Renew the idle time of this process's in-flight entries while handlers run. Default `true`:
   * from a worker thread with its own connection, so a handler blocking the event loop keeps its
   * entries for up to `maxBlocked` (default 5 min). `{ thread: false }`: renew on the event loop.
   */
  leases?: LeasesOption;
  /** Time between lease renewals. Default `minIdleTime / 3` (the smallest over handlers). */
  leaseInterval?: number | string;
  /** Every how many ticks the "group fell behind a trimmed stream" check runs (XINFO GROUPS + XINFO STREAM). Default 10; 0 turns it off. */
  trimCheckEvery?: number;
  /** Consumer clean-up; `false` turns it off. */
  reapConsumers?: false | ReapConsumersOptions;
  /**
   * Dead-letter stream key of a stream: `(stream) => key` or a template with `%s` for the stream
   * (`'{%s}:dlq'`). Default `deadLetterKey(stream)` (`orders` → `{orders}:dead`). Under
   * `RedisStreamsModule`, set it once as the module's `deadLetters.deadLetterKey` instead: servers
   * built by `RedisStreamsServerFactory` and `DeadLetterService` then both read it.
   */
  deadLetterKey?: DeadLetterKeySetting;
  /** Approximate MAXLEN of dead-letter streams; 0 (default) never trims them. */
  deadLetterMaxLen?: number;
  /** Called after each dead letter this server wrote (max deliveries, decode errors, trimmed tombstones). */
  onDeadLetter?: (letter: DeadLetterNotice) => void | Promise<void>;
  /**
   * Backoff between deliveries of an entry whose handler failed (docs/recovery.md, "Retry with
   * backoff"). Default none: a failed entry stays with its consumer and comes back after
   * `minIdleTime`. Per handler: `extras.retry` (`false` turns it off for that handler).
   */
  retry?: RetryPolicy;
  /** Consumer of the group holding failed entries during their backoff. Default `retry`; workers must agree on it. */
  retryConsumer?: string;
}

export interface ReapConsumersOptions {
  /** Consumers idle (XINFO CONSUMERS `idle`) at least this long and holding nothing are removed. Default 1 h. */
  minIdleTime?: number | string;
  /** Every how many ticks to look. Default 20. */
  every?: number;
}

export interface ResolvedRecoveryOptions {
  readonly enabled: boolean;
  readonly minIdleTime: number;
  /** The tick interval given, or a quarter of `minIdleTime` (the scheduler derives its own from the smallest one in use). */
  readonly interval: number;
  /** Whether `interval` was given (else it follows the smallest `minIdleTime` of the recovered streams). */
  readonly intervalGiven: boolean;
  readonly maxDeliveries: number;
  readonly pageSize: number;
  readonly maxPages: number;
  readonly leases: boolean;
  /** The lease thread's settings (`leases.thread`, `leases.maxBlocked`). */
  readonly leaseThread: { readonly enabled: boolean; readonly maxBlocked: number };
  /** `undefined`: a third of the smallest per-stream `minIdleTime`. */
  readonly leaseInterval: number | undefined;
  readonly trimCheckEvery: number;
  readonly reap: { readonly minIdleTime: number; readonly every: number } | undefined;
  readonly deadLetterKey: ((stream: string) => string) | undefined;
  readonly deadLetterMaxLen: number;
  readonly onDeadLetter: ((letter: DeadLetterNotice) => void | Promise<void>) | undefined;
  readonly retry: ResolvedRetryPolicy | undefined;
  readonly retryConsumer: string;
}

export const DEFAULT_RECOVERY_MIN_IDLE_MS = 30_000;
export const DEFAULT_MAX_DELIVERIES = 5;
export const DEFAULT_RECOVERY_PAGE_SIZE = 100;
export const DEFAULT_RECOVERY_MAX_PAGES = 10;
export const DEFAULT_TRIM_CHECK_EVERY = 10;
export const DEFAULT_REAP_MIN_IDLE_MS = 3_600_000;
export const DEFAULT_REAP_EVERY = 20;

const KNOWN = new Set([
  'enabled', 'minIdleTime', 'interval', 'maxDeliveries', 'pageSize', 'maxPages', 'leases', 'leaseInterval',
  'trimCheckEvery', 'reapConsumers', 'deadLetterKey', 'deadLetterMaxLen', 'onDeadLetter', 'retry', 'retryConsumer',
]);

/**
 * Validates the `recovery` option (`false` = no timer, `runOnce()` only) and fills the defaults.
 * Throws `RedisStreamsOptionError` naming the option (`recovery.minIdleTime`, …).
 */
export function resolveRecoveryOptions(value: unknown, name = 'recovery'): ResolvedRecoveryOptions {
  if (value === false) return resolveRecoveryOptions({ enabled: false }, name);
  const given = (value ?? {}) as RecoveryOptions;
  if (given === null || typeof given !== 'object' || Array.isArray(given)) {
    throw new RedisStreamsOptionError(name, `must be false or an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(given)) {
    if (!KNOWN.has(key)) throw new RedisStreamsOptionError(`${name}.${key}`, 'is not a recovery option');
  }
  const option = (key: string) => `${name}.${key}`;
  const minIdleTime = optionalDuration(option('minIdleTime'), given.minIdleTime) ?? DEFAULT_RECOVERY_MIN_IDLE_MS;
  // Timers: an explicit interval above MAX_TIMER_MS is rejected, a derived one is capped.
  const givenInterval = optionalTimerDuration(option('interval'), given.interval);
  const interval = givenInterval ?? derivedTickInterval(minIdleTime);
  const leaseInterval = optionalTimerDuration(option('leaseInterval'), given.leaseInterval);
  const leases = resolveLeasesOption(option('leases'), given.leases);
  const reap = given.reapConsumers;
  let resolvedReap: ResolvedRecoveryOptions['reap'];
  if (reap !== false) {
    if (reap !== undefined && (reap === null || typeof reap !== 'object')) {
      throw new RedisStreamsOptionError(option('reapConsumers'), `must be false or { minIdleTime?, every? }, got ${describe(reap)}`);
    }
    resolvedReap = {
      minIdleTime: optionalDuration(option('reapConsumers.minIdleTime'), reap?.minIdleTime) ?? DEFAULT_REAP_MIN_IDLE_MS,
      every: integerOption(option('reapConsumers.every'), reap?.every, DEFAULT_REAP_EVERY, 1),
    };
  }
  return {
    enabled: booleanOption(option('enabled'), given.enabled, true),
    minIdleTime,
    interval,
    intervalGiven: givenInterval !== undefined,
    maxDeliveries: integerOption(option('maxDeliveries'), given.maxDeliveries, DEFAULT_MAX_DELIVERIES, 1),
    pageSize: integerOption(option('pageSize'), given.pageSize, DEFAULT_RECOVERY_PAGE_SIZE, 1, 10_000),
    maxPages: integerOption(option('maxPages'), given.maxPages, DEFAULT_RECOVERY_MAX_PAGES, 1, 1_000),
    leases: leases.enabled,
    leaseThread: { enabled: leases.thread, maxBlocked: leases.maxBlocked },
    leaseInterval,
    trimCheckEvery: integerOption(option('trimCheckEvery'), given.trimCheckEvery, DEFAULT_TRIM_CHECK_EVERY, 0),
    reap: resolvedReap,
    deadLetterKey: deadLetterKeyOption(option('deadLetterKey'), given.deadLetterKey),
    deadLetterMaxLen: integerOption(option('deadLetterMaxLen'), given.deadLetterMaxLen, 0, 0),
    onDeadLetter: functionOption(option('onDeadLetter'), given.onDeadLetter, '(letter) => void'),
    retry: resolveRetryPolicy(option('retry'), given.retry),
    retryConsumer: nonEmptyStringOption(option('retryConsumer'), given.retryConsumer, DEFAULT_RETRY_CONSUMER),
  };
}

/**
 * Whether recovery runs for a handler: the server's ticks on (`recovery: false` is
 * `{ enabled: false }`) and the handler not left alone (`extras.recovery: false`). Everything that
 * parks an entry with the retry consumer (a retry policy, `ctx.nack({ delay })`, a per-key rate
 * limit's hold) asks this first: only a tick claims such an entry back. Where it answers false the
 * entry stays with its worker instead. `runOnce()` alone does not count: nothing says it is called.
 */
export function recoveryRunsFor(options: Pick<ResolvedRecoveryOptions, 'enabled'>, handler: { readonly recovery?: boolean | undefined }): boolean {
  return options.enabled && handler.recovery !== false;
}

/** The default tick interval for a smallest `minIdleTime`: a quarter of it, capped to a timer's range. */
export function derivedTickInterval(smallestMinIdleTime: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(smallestMinIdleTime / 4)));
}

function optionalDuration(option: string, value: unknown): number | undefined {
  return value === undefined ? undefined : durationMillisOption(option, value);
}

function optionalTimerDuration(option: string, value: unknown): number | undefined {
  return value === undefined ? undefined : timerDurationOption(option, value);
}

function functionOption<T>(option: string, value: unknown, shape: string): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new RedisStreamsOptionError(option, `must be a function ${shape}, got ${describe(value)}`);
  return value as T;
}
