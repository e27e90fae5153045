import { RedisStreamsOptionError } from '../errors.js';
import { durationMillisOption, timerDurationOption } from '../duration.js';
import { resolveRetryPolicy, type ResolvedRetryPolicy, type RetryPolicy } from '../recovery/retry-policy.js';
import { partitionCountOption } from '../partitions/partition-keys.js';
import { priorityLanesOption } from '../priorities/priority-lanes.js';
import {
  resolveGlobalConcurrency,
  resolveRateLimit,
  type GlobalConcurrencyOption,
  type RateLimitOption,
  type ResolvedGlobalConcurrency,
  type ResolvedRateLimit,
} from '../flow/flow-options.js';
import { booleanOption, describe, integerOption, nonEmptyStringOption, streamIdOption } from '../validation.js';
import { resolveBatchOption, type BatchOption, type ResolvedBatch } from './batch/batch-options.js';
import { resolveIdempotency, type IdempotencyOption, type ResolvedIdempotency } from './idempotency-options.js';
import type { RedisStreamsContext } from './context.js';
import { ackModeOption, START_ID_SPECIALS, type AckMode, type ResolvedServerOptions } from './options.js';
import { keepResultsTtl, type KeepResultsOption } from '../lifecycle/lifecycle-records.js';

/** Per-handler options, given as the pattern decorator's `extras`. */
export interface RedisStreamsHandlerExtras {
  /** Consumer group of this handler (default: the server's `group`). */
  group?: string;
  /**
   * Hand the handler the entry's fields as stored, without decoding: `true` a `{ name: value }`
   * map (integer-like names first, the last of duplicate names wins, text), `'pairs'`
   * `[name, value][]` strings in stream order with every duplicate, `'buffers'` `[name, value][]`
   * Buffers in stream order: the exact bytes (this handler's group is read as bytes).
   */
  raw?: RawMode;
  /** Ack mode of this handler (default: the server's `ackMode`). */
  ackMode?: AckMode;
  /** Start id when this handler's group is created (default: the server's `startId`). */
  startId?: string;
  /** Handlers of this stream running at once (default and upper bound: the server's `concurrency`). */
  concurrency?: number;
  /** Deliveries after which recovery dead-letters an entry (used by the recovery provider). */
  maxDeliveries?: number;
  /** Idle time after which recovery reclaims this stream's entries: ms or ISO-8601 (`PT30S`). */
  minIdleTime?: number | string;
  /** `false`: recovery leaves this stream + group alone. */
  recovery?: boolean;
  /** Backoff between deliveries of a failed entry (default: the server's `recovery.retry`); `false`: none for this handler. */
  retry?: RetryPolicy | false;
  /**
   * Consumer-side idempotency (every Redis version): an entry whose key was recorded as processed
   * is acknowledged without running the handler; the key is recorded (with a TTL) in the same
   * script call as the acknowledgement. `true`: keyed by entry id, kept 24 h; or `{ key, ttl }`.
   * See docs/server.md for the window that remains.
   */
  idempotency?: IdempotencyOption;
  /**
   * Batch mode (`@EventPattern` only): the handler gets an array of payloads and a
   * `RedisStreamsBatchContext`, once `size` entries are there or `waitMs` passed (docs/batch.md).
   */
  batch?: BatchOption;
  /**
   * Partitioned stream: the pattern is read from `count` streams `<stream>:p0` … `<stream>:p<count-1>`
   * (1 to 1024; default 1, the stream itself), each on its own hash slot, so a hot pattern uses every
   * master of a Redis Cluster. Clients must set the same count (`partitions` client option); a
   * different count is a `RedisStreamsPartitionMismatchError` at `listen()`. See docs/high-availability.md.
   */
  partitions?: number;
  /**
   * At most `max` entries of this handler started per `per` (ms or ISO-8601), shared by every
   * worker of its group (a token bucket in Redis). Entries beyond it are not read, so they count
   * no delivery and no worker spins. See docs/flow-control.md.
   */
  rateLimit?: RateLimitOption<RedisStreamsContext>;
  /**
   * At most this many entries of this handler in hand (read, not yet settled) over every worker of
   * its group: `n` or `{ max, lease? }`. A crashed worker's permits come back after `lease`
   * (default 30 s). See docs/flow-control.md.
   */
  globalConcurrency?: GlobalConcurrencyOption;
  /**
   * Priority lanes, highest first (`['high', 'normal', 'low']`, 1 to 10 names of letters, digits,
   * `_`, `-`, `.`): the pattern is read from one stream per lane, `<stream>:high` … in one group by
   * one handler, higher lanes first, yet every read offers each lane below the highest at least one
   * entry (so a flood of `high` still lets one `low` entry through per read). Clients name the
   * lanes too (`priorities` client option) and set a record's `priority`. Not with `partitions`,
   * `rateLimit` or `globalConcurrency`. See docs/server.md#priorities.
   */
  priorities?: readonly string[];
  /**
   * Time limit of one delivery (ms or ISO-8601, such as `PT30S`): past it the handler's
   * `ctx.signal` aborts and the delivery fails with a `RedisStreamsHandlerTimeoutError` (retry policy and
   * `maxDeliveries` apply as to any failure), whatever the handler does after; its late outcome is
   * ignored and logged once. A batch handler: the whole batch. Not for `@MessagePattern` handlers
   * (the caller's `timeout` bounds a request). See docs/lifecycle.md.
   */
  timeout?: number | string;
  /**
   * Keep each entry's outcome, its handler's return value or its error, for `ttl` (ms or
   * ISO-8601) under its id, for `client.result()` (`@EventPattern` single-entry handlers; default:
   * the server's `keepResults`). `false`: not for this handler. See docs/lifecycle.md.
   */
  keepResults?: KeepResultsOption | false;
}

/** `extras.raw`: false decodes (the default); see `RedisStreamsHandlerExtras.raw`. */
export type RawMode = boolean | 'pairs' | 'buffers';

export interface ResolvedHandlerExtras {
  readonly group: string;
  readonly raw: RawMode;
  readonly ackMode: AckMode;
  readonly startId: string;
  readonly concurrency: number;
  readonly maxDeliveries: number | undefined;
  /** `extras.minIdleTime` in ms (recovery's threshold for this stream). */
  readonly minIdleTime: number | undefined;
  /** `extras.recovery`: false when recovery must leave this stream + group alone. */
  readonly recovery: boolean | undefined;
  /** `extras.retry`: `false` when turned off for this handler, `undefined` when the server's policy applies. */
  readonly retry: ResolvedRetryPolicy | false | undefined;
  /** `extras.idempotency`, resolved; `undefined` when off. */
  readonly idempotency: ResolvedIdempotency | undefined;
  /** `extras.batch`, resolved; `undefined` when the handler takes one entry per call. */
  readonly batch: ResolvedBatch | undefined;
  /** `extras.partitions`: streams the pattern is spread over (1: not partitioned). */
  readonly partitions: number;
  /** `extras.rateLimit`, resolved; `undefined` when there is none. */
  readonly rateLimit: ResolvedRateLimit | undefined;
  /** `extras.globalConcurrency`, resolved; `undefined` when there is none. */
  readonly globalConcurrency: ResolvedGlobalConcurrency | undefined;
  /** `extras.priorities`: the lanes, highest first; `undefined` when the pattern has none. */
  readonly priorities: readonly string[] | undefined;
  /** `extras.timeout` in ms; `undefined`: no time limit. */
  readonly timeout: number | undefined;
  /** `extras.keepResults` (else the server's): how long results are kept, in ms; `undefined`: not kept. */
  readonly keepResults: number | undefined;
}

/** Validates one handler's `extras` against the server defaults. `pattern` only names the handler in errors. */
export function resolveHandlerExtras(
  pattern: string,
  extras: Record<string, unknown> | undefined,
  server: ResolvedServerOptions,
): ResolvedHandlerExtras {
  const given = extras ?? {};
  const name = (option: string) => `extras.${option} (handler "${pattern}")`;
  const recovery = given.recovery === undefined ? undefined : booleanOption(name('recovery'), given.recovery, true);
  // Entries released for a retry are taken back by recovery only: without it they would wait forever.
  if (recovery === false && given.retry !== undefined && given.retry !== false) {
    throw new RedisStreamsOptionError(name('retry'), 'needs recovery: this handler has recovery: false');
  }
  const ackMode = ackModeOption(name('ackMode'), given.ackMode, server.ackMode);
  const idempotency = resolveIdempotency(name('idempotency'), given.idempotency);
  const partitions = partitionCountOption(name('partitions'), given.partitions);
  const rateLimit = resolveRateLimit(name('rateLimit'), given.rateLimit);
  // A key is known per entry, a batch is started as one: a batch cannot wait for some of its keys.
  if (rateLimit?.key !== undefined && given.batch !== undefined && given.batch !== false) {
    throw new RedisStreamsOptionError(`${name('rateLimit')}.key`, 'cannot be used with extras.batch (a per-key limit is applied per entry); limit the batch handler as a whole or drop batch');
  }
  const globalConcurrency = resolveGlobalConcurrency(name('globalConcurrency'), given.globalConcurrency);
  const priorities = priorityLanesOption(name('priorities'), given.priorities);
  // A limit its reader applies needs a reader of its own, as priority lanes do.
  if (priorities !== undefined) checkPriorityCombinations(name('priorities'), partitions, limitsTheReader({ rateLimit, globalConcurrency }));
  return {
    group: given.group === undefined ? server.group : nonEmptyStringOption(name('group'), given.group),
    raw: rawOption(name('raw'), given.raw),
    ackMode,
    startId: streamIdOption(name('startId'), given.startId, server.startId, START_ID_SPECIALS),
    concurrency: Math.min(integerOption(name('concurrency'), given.concurrency, server.concurrency, 1), server.concurrency),
    maxDeliveries:
      given.maxDeliveries === undefined ? undefined : integerOption(name('maxDeliveries'), given.maxDeliveries, 0, 1),
    minIdleTime: given.minIdleTime === undefined ? undefined : durationMillisOption(name('minIdleTime'), given.minIdleTime),
    recovery,
    retry: given.retry === false ? false : resolveRetryPolicy('extras.retry', given.retry, ` (handler "${pattern}")`),
    idempotency,
    batch: resolveBatchOption(name('batch'), given.batch, { prefetch: server.prefetch, ackMode, idempotency: idempotency !== undefined }),
    partitions,
    rateLimit,
    globalConcurrency,
    priorities,
    timeout: given.timeout === undefined ? undefined : timerDurationOption(name('timeout'), given.timeout),
    keepResults: keepResultsOf(name('keepResults'), given.keepResults, server.keepResults, given.batch),
  };
}

/** What decides how a handler's stream is read: its shared limits. */
export type HandlerLimits = Pick<ResolvedHandlerExtras, 'rateLimit' | 'globalConcurrency'>;

/**
 * The `rateLimit` its reader applies (tokens taken before each read), or undefined: one with a
 * `key` is applied per entry, once the entry's key is known, and leaves the reader alone.
 */
export function readerRateLimit(rateLimit: ResolvedRateLimit | undefined): ResolvedRateLimit | undefined {
  return rateLimit?.key === undefined ? rateLimit : undefined;
}

/**
 * Whether a handler's limits gate its reader (`globalConcurrency`, or a `rateLimit` without key):
 * such a binding is read alone, a grant before each non-blocking read (stream-reader.ts
 * `readLimited`). Otherwise it is read like any stream, with a blocking XREADGROUP.
 */
export function limitsTheReader(limits: HandlerLimits): boolean {
  return readerRateLimit(limits.rateLimit) !== undefined || limits.globalConcurrency !== undefined;
}

/**
 * Lanes are read together by one reader, highest first. Partitions spread one pattern over slots
 * (one reader per slot on a Cluster), and a shared limit makes its binding read alone: either
 * would split the lanes over readers, and no read would compare them.
 */
function checkPriorityCombinations(option: string, partitions: number, limited: boolean): void {
  if (partitions > 1) {
    throw new RedisStreamsOptionError(option, 'cannot be combined with extras.partitions: give the pattern lanes or partitions, not both');
  }
  if (limited) {
    throw new RedisStreamsOptionError(option, 'cannot be combined with extras.globalConcurrency or an extras.rateLimit without key (a binding its limits gate is read alone, so its lanes could not be compared)');
  }
}

function keepResultsOf(option: string, value: unknown, serverTtl: number | undefined, batch: unknown): number | undefined {
  const ttl = value === undefined ? serverTtl : keepResultsTtl(option, value, timerDurationOption);
  if (value !== undefined && ttl !== undefined && batch !== undefined && batch !== false) {
    throw new RedisStreamsOptionError(option, 'cannot be used with extras.batch: a batch handler returns one value for many entries');
  }
  return batch !== undefined && batch !== false ? undefined : ttl;
}

function rawOption(option: string, value: unknown): RawMode {
  if (value === 'pairs' || value === 'buffers') return value;
  if (value === undefined || typeof value === 'boolean') return value ?? false;
  throw new RedisStreamsOptionError(option, `must be true, false, "pairs" or "buffers", got ${describe(value)}`);
}
