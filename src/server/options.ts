import { hostname } from 'node:os';
import type { ConsumerSerializer } from '@nestjs/microservices';
import { warnDeprecatedOnce } from '../deprecation.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisConnection } from '../redis/connection.js';
import { connectionOption } from '../redis/connection-option.js';
import type { StreamDeserializer } from '../codec/stream-deserializer.js';
import { resolveDelayedOptions, type DelayedOptions, type ResolvedDelayedOptions } from './delayed-options.js';
import { resolveRecoveryOptions, type RecoveryOptions, type ResolvedRecoveryOptions } from '../recovery/recovery-options.js';
import { resolveTelemetryOptions, type ResolvedTelemetryOptions, type TelemetryOptions } from '../telemetry/telemetry-options.js';
import { describe, integerOption, nonEmptyStringOption, streamIdOption, timerMillisOption } from '../validation.js';
import { keepResultsTtl, type KeepResultsOption } from '../lifecycle/lifecycle-records.js';
import { timerDurationOption } from '../duration.js';

export type AckMode = 'auto' | 'manual';

/**
 * Work-queue mode (Redis 8.2+): acknowledge with XACKDEL, which deletes the entry too.
 * - `keepref`: delete at once (KEEPREF); other groups' pending references dangle and their unread
 *   copies are gone, so only for a stream that one group reads;
 * - `acked`: delete once every group of the stream has read and acknowledged it (ACKED).
 */
export type WorkQueuePolicy = 'keepref' | 'acked';

export interface RedisStreamsServerOptions {
  /**
   * Where to connect: a `redis://` or `rediss://` URL, `unix:///path/to/redis.sock`, ioredis options,
   * or an existing `Redis`/`Cluster` client (used for commands; readers get their own). Anything
   * else, and ioredis' `keyPrefix`, is a `RedisStreamsOptionError`.
   */
  connection?: RedisConnection;
  /**
   * ms `listen()` waits for Redis to be reachable at start-up before it fails (closing what it
   * opened); wrong credentials fail at once. After a successful start, reconnects never give up. Default 10000.
   */
  startupTimeout?: number;
  /** Consumer group of every handler; a handler may name another one in its `extras.group`. */
  group: string;
  /** Consumer name inside the group. Keep it stable across restarts (see docs/server.md). Default `${hostname}-${pid}`. */
  consumer?: string;
  /** Prepended to every pattern to form the stream key (the client's option of the same name). Default `''`. */
  streamPrefix?: string;
  /** @deprecated The old name of `streamPrefix` (still read, with a warning once). */
  prefix?: string;
  /** Where a new group starts: `0` (default: entries written before the first worker are consumed), `$`, or a stream id. */
  startId?: string;
  /** Handlers running at once, over all streams. Default 50 (or `prefetch` when that is smaller). */
  concurrency?: number;
  /**
   * Entries fetched but not yet acked (or nacked), over all streams. Default: max(2 × concurrency,
   * 4 × readBatch) = 400 per blocking reader (one per consumer group), or 10 per stream of that
   * reader when more (200 streams of one group: 2000), summed over the readers; see docs/server.md
   * "Sizing a worker". Must be ≥ concurrency.
   */
  prefetch?: number;
  /**
   * Bytes of the entries fetched but not yet acked (lengths of ids, field names and values), over
   * all streams: reads stop while they reach it. Default 64 MiB. An entry larger than it is still
   * read, alone. See docs/server.md "Sizing a worker".
   */
  maxPrefetchBytes?: number;
  /** Largest COUNT of one XREADGROUP. Default 100. */
  readBatch?: number;
  /** BLOCK of the blocking XREADGROUP, in ms. Default 5000. */
  blockMs?: number;
  /** `auto`: ack when the handler succeeded. `manual`: the handler calls `ctx.ack()` / `ctx.nack()`. Default `auto`. */
  ackMode?: AckMode;
  /**
   * Work-queue mode (Redis 8.2+, capability `xackdel`): acknowledge with XACKDEL, so every handled
   * entry leaves the stream and a stream used as a queue stays small without trimming. `true`:
   * KEEPREF, or ACKED on a stream that several groups of this server read; `{ policy: 'acked' }`
   * when other services' groups read the stream too. Dead-letter moves delete the same way.
   * On a server without XACKDEL, `listen()` fails with `RedisStreamsCapabilityError`. Default off.
   */
  workQueue?: boolean | { policy?: WorkQueuePolicy };
  /** How long `close()` waits for running handlers, in ms. Default 10000. */
  shutdownTimeout?: number;
  /** Keep every event handler's outcome for `client.result()`: `{ ttl }` (ms or ISO-8601); a handler's `extras.keepResults` overrides it. Default off. See docs/lifecycle.md. */
  keepResults?: KeepResultsOption | false;
  /** Consumer that `close()` hands fetched-but-unstarted entries to (XCLAIM … IDLE huge JUSTID). Default `handoff`. */
  handoffConsumer?: string;
  /** PEXPIRE of a reply stream after each reply, in ms (a dead client's reply stream goes away). Default 60000. */
  replyTtl?: number;
  /**
   * Safety cap (`MAXLEN ~`) of a reply stream; the requesting client removes the replies it read.
   * Must exceed the replies one client can have unread (its requests in flight). Default 100000.
   */
  replyMaxLen?: number;
  /** First and largest delay between retries of a failing read, in ms. Defaults 100 and 5000. */
  reconnectDelay?: { initialMs?: number; maxMs?: number };
  /** Decodes an entry's fields into `{ pattern, data, id?, replyTo?, headers? }`. Default: the JSON wire format. */
  deserializer?: StreamDeserializer;
  /** Turns a reply packet (`{ response?, err?, isDisposed }`) into what is written as the reply's `packet`. Default: identity. */
  serializer?: ConsumerSerializer;
  /**
   * Recovery of idle entries, dead letters, leases, trim-loss reports, consumer clean-up (see
   * docs/recovery.md). `false`: no timer (`RedisStreamsRecovery.runOnce()` still works). Default: on, minIdleTime 30 s.
   */
  recovery?: RecoveryOptions | false;
  /**
   * Promotion of delayed entries (`RedisStreamsRecord` `delay` / `deliverAt`, docs/scheduling.md):
   * every worker moves the due entries of the streams it reads into them. `false`: this worker
   * does not (some other worker must). Default on, every second at the latest.
   */
  delayed?: DelayedOptions | false;
  /**
   * OpenTelemetry spans and metrics, when `@opentelemetry/api` is installed and a provider is
   * registered before `listen()` (docs/observability.md). `false` turns both off. Default on.
   */
  telemetry?: boolean | TelemetryOptions;
}

export interface ResolvedServerOptions {
  readonly connection: RedisConnection | undefined;
  readonly startupTimeout: number;
  readonly group: string;
  readonly consumer: string;
  readonly streamPrefix: string;
  readonly startId: string;
  readonly concurrency: number;
  /** The given prefetch, or the default per reader (`prefetchGiven` false: scaled by flow-control.ts). */
  readonly prefetch: number;
  readonly prefetchGiven: boolean;
  readonly maxPrefetchBytes: number;
  readonly readBatch: number;
  readonly blockMs: number;
  readonly ackMode: AckMode;
  /** `undefined`: off; `{ policy: undefined }`: KEEPREF, ACKED where several of this server's groups read a stream. */
  readonly workQueue: { readonly policy: WorkQueuePolicy | undefined } | undefined;
  readonly shutdownTimeout: number;
  /** `keepResults`' TTL in ms; `undefined`: off. */
  readonly keepResults: number | undefined;
  readonly handoffConsumer: string;
  readonly replyTtl: number;
  readonly replyMaxLen: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  readonly recovery: ResolvedRecoveryOptions;
  /** `undefined`: this worker promotes no delayed entries. */
  readonly delayed: ResolvedDelayedOptions | undefined;
  readonly telemetry: ResolvedTelemetryOptions;
}

export const DEFAULT_CONCURRENCY = 50;
export const DEFAULT_READ_BATCH = 100;
/** 64 MiB: two entries per handler at the default concurrency up to 640 KB each; 64 entries of 1 MB (docs/server.md "Sizing a worker"). */
export const DEFAULT_MAX_PREFETCH_BYTES = 64 * 1024 * 1024;
export const DEFAULT_BLOCK_MS = 5_000;
export const DEFAULT_SHUTDOWN_TIMEOUT = 10_000;
export const DEFAULT_STARTUP_TIMEOUT = 10_000;
export const DEFAULT_HANDOFF_CONSUMER = 'handoff';
export const DEFAULT_REPLY_TTL = 60_000;
export const DEFAULT_REPLY_MAXLEN = 100_000;
/** Start ids that are no stream id: from the beginning, or new entries only. */
export const START_ID_SPECIALS = ['0', '$'] as const;

const KNOWN_OPTIONS = new Set<string>([
  'connection', 'startupTimeout', 'group', 'consumer', 'streamPrefix', 'prefix', 'startId', 'concurrency', 'prefetch', 'maxPrefetchBytes', 'readBatch', 'blockMs',
  'ackMode', 'workQueue', 'shutdownTimeout', 'keepResults', 'handoffConsumer', 'replyTtl', 'replyMaxLen', 'reconnectDelay',
  'deserializer', 'serializer', 'recovery', 'delayed', 'telemetry',
] satisfies (keyof RedisStreamsServerOptions)[]);

export function defaultConsumerName(): string {
  return `${hostname()}-${process.pid}`;
}

/** Validates every server option and fills defaults; throws `RedisStreamsOptionError` naming the first bad one. */
export function resolveServerOptions(options: RedisStreamsServerOptions): ResolvedServerOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new RedisStreamsOptionError('options', `must be an object, got ${describe(options)}`);
  }
  // A misspelt option (`concurency`) would otherwise fall back to its default without a word.
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(key)) throw new RedisStreamsOptionError(key, 'is not a RedisStreamsServer option');
  }
  const connection = connectionOption('connection', options.connection);
  const startupTimeout = integerOption('startupTimeout', options.startupTimeout, DEFAULT_STARTUP_TIMEOUT, 1, 2 ** 31 - 1);
  const group = nonEmptyStringOption('group', options.group);
  const consumer = nonEmptyStringOption('consumer', options.consumer, defaultConsumerName());
  const streamPrefix = streamPrefixOption(options);
  const startId = streamIdOption('startId', options.startId, '0', START_ID_SPECIALS);
  const prefetchGiven = integerOption('prefetch', options.prefetch, 0, 1);
  const concurrency = integerOption(
    'concurrency',
    options.concurrency,
    prefetchGiven > 0 ? Math.min(DEFAULT_CONCURRENCY, prefetchGiven) : DEFAULT_CONCURRENCY,
    1,
  );
  const readBatch = integerOption('readBatch', options.readBatch, DEFAULT_READ_BATCH, 1, 10_000);
  // Room for four read batches: one handled, the next read in flight, and the acks of the reads
  // before it, whose slots come back only when their XACK is answered. With two, every read waited
  // for an XACK round trip (docs/benchmarks.md: 400 against 200 handled ~1.3× the entries per second).
  const prefetch = prefetchGiven > 0 ? prefetchGiven : Math.max(2 * concurrency, 4 * readBatch);
  if (prefetch < concurrency) {
    throw new RedisStreamsOptionError(
      'prefetch',
      `must be at least concurrency (${concurrency}), got ${prefetch}: handlers could never all be busy`,
    );
  }
  const maxPrefetchBytes = integerOption('maxPrefetchBytes', options.maxPrefetchBytes, DEFAULT_MAX_PREFETCH_BYTES, 1);
  const blockMs = timerMillisOption('blockMs', options.blockMs, DEFAULT_BLOCK_MS, 1);
  const ackMode = ackModeOption('ackMode', options.ackMode, 'auto');
  const workQueue = workQueueOption(options.workQueue);
  const shutdownTimeout = timerMillisOption('shutdownTimeout', options.shutdownTimeout, DEFAULT_SHUTDOWN_TIMEOUT, 0);
  const handoffConsumer = nonEmptyStringOption('handoffConsumer', options.handoffConsumer, DEFAULT_HANDOFF_CONSUMER);
  if (handoffConsumer === consumer) {
    throw new RedisStreamsOptionError('handoffConsumer', `must differ from the consumer name "${consumer}"`);
  }
  const replyTtl = integerOption('replyTtl', options.replyTtl, DEFAULT_REPLY_TTL, 1);
  const replyMaxLen = integerOption('replyMaxLen', options.replyMaxLen, DEFAULT_REPLY_MAXLEN, 1);
  const delay = options.reconnectDelay ?? {};
  if (delay === null || typeof delay !== 'object' || Array.isArray(delay)) {
    throw new RedisStreamsOptionError('reconnectDelay', `must be an object, got ${describe(delay)}`);
  }
  const reconnectInitialMs = timerMillisOption('reconnectDelay.initialMs', delay.initialMs, 100, 1);
  const reconnectMaxMs = timerMillisOption('reconnectDelay.maxMs', delay.maxMs, Math.max(5_000, reconnectInitialMs), reconnectInitialMs);
  codecOption('deserializer', options.deserializer, 'deserialize');
  codecOption('serializer', options.serializer, 'serialize');
  const recovery = resolveRecoveryOptions(options.recovery);
  const delayed = resolveDelayedOptions(options.delayed);
  const telemetry = resolveTelemetryOptions(options.telemetry);
  if (recovery.retryConsumer === consumer || recovery.retryConsumer === handoffConsumer) {
    throw new RedisStreamsOptionError('recovery.retryConsumer', `must differ from the consumer name and the handoffConsumer, got "${recovery.retryConsumer}"`);
  }
  return {
    connection,
    startupTimeout,
    group,
    consumer,
    streamPrefix,
    startId,
    concurrency,
    prefetch,
    prefetchGiven: prefetchGiven > 0,
    maxPrefetchBytes,
    readBatch,
    blockMs,
    ackMode,
    workQueue,
    shutdownTimeout,
    keepResults: keepResultsTtl('keepResults', options.keepResults, timerDurationOption),
    handoffConsumer,
    replyTtl,
    replyMaxLen,
    reconnectInitialMs,
    reconnectMaxMs,
    recovery,
    delayed,
    telemetry,
  };
}

/** `ackMode` of the server or (`extras.ackMode`) of a handler. */
export function ackModeOption(option: string, value: unknown, fallback: AckMode): AckMode {
  if (value === undefined) return fallback;
  if (value === 'auto' || value === 'manual') return value;
  throw new RedisStreamsOptionError(option, `must be "auto" or "manual", got ${describe(value)}`);
}

/** `streamPrefix`, or its deprecated alias `prefix` (warned once); both with different values is an error. */
function streamPrefixOption(options: RedisStreamsServerOptions): string {
  const current = options.streamPrefix === undefined ? undefined : stringOption('streamPrefix', options.streamPrefix);
  if (options.prefix === undefined) return current ?? '';
  const old = stringOption('prefix', options.prefix);
  warnDeprecatedOnce('RedisStreamsServer', 'the server option prefix', 'name it streamPrefix, as the client does');
  if (current !== undefined && current !== old) {
    throw new RedisStreamsOptionError('prefix', `is the deprecated name of streamPrefix and disagrees with it ("${old}" vs "${current}"); give streamPrefix only`);
  }
  return old;
}

function workQueueOption(value: unknown): ResolvedServerOptions['workQueue'] {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { policy: undefined };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('workQueue', `must be true, false or { policy }, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== 'policy') throw new RedisStreamsOptionError(`workQueue.${key}`, 'is not a workQueue option (only policy)');
  }
  const policy = (value as { policy?: unknown }).policy;
  if (policy === undefined || policy === 'keepref' || policy === 'acked') return { policy };
  throw new RedisStreamsOptionError('workQueue.policy', `must be "keepref" or "acked", got ${describe(policy)}`);
}

function stringOption(option: string, value: unknown): string {
  if (typeof value !== 'string') throw new RedisStreamsOptionError(option, `must be a string, got ${describe(value)}`);
  return value;
}

function codecOption(option: string, value: unknown, method: string): void {
  if (value === undefined) return;
  if (value === null || typeof value !== 'object' || typeof (value as Record<string, unknown>)[method] !== 'function') {
    throw new RedisStreamsOptionError(option, `must be an object with a ${method}() method`);
  }
}
