import type { Deserializer, Serializer } from '@nestjs/microservices';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisConnection } from '../redis/connection.js';
import { connectionOption } from '../redis/connection-option.js';
import { streamKeyFor } from '../redis/keys.js';
import { checkPartitionable, partitionCountOption } from '../partitions/partition-keys.js';
import { priorityLanesOption } from '../priorities/priority-lanes.js';
import { resolveTelemetryOptions, type ResolvedTelemetryOptions, type TelemetryOptions } from '../telemetry/telemetry-options.js';
import { booleanOption, describe, timerMillisOption } from '../validation.js';
import { newProducerId, resolveIdempotence, type IdempotenceOptions, type ResolvedIdempotence } from './idempotent-emit.js';
import { compileTrimming, DEFAULT_TRIMMING, type CompiledTrimming, type StreamTrimming } from './trimming.js';

export interface RedisStreamsClientOptions {
  /**
   * `redis://` / `rediss://` URL, `unix:///path/to/redis.sock`, ioredis options, or an existing
   * `Redis`/`Cluster` (duplicated: the client keeps its own sockets). Anything else, and ioredis'
   * `keyPrefix`, is a `RedisStreamsOptionError`.
   */
  connection?: RedisConnection;
  /** Prepended to every pattern to form the stream key (same rule as the server). Default `''`. */
  streamPrefix?: string;
  /** Default trimming of every XADD. Default `{ maxLen: 100000 }` (approximate, `MAXLEN ~`). */
  trim?: StreamTrimming;
  /** Trimming per pattern (normalized pattern string → trimming), over `trim`. */
  trimming?: Record<string, StreamTrimming>;
  /** Events: don't create a missing stream (`NOMKSTREAM`); the emit then yields `null`. Default false. */
  noMkStream?: boolean;
  /** Request/reply: ms to wait for a reply. Default 30000. */
  timeout?: number;
  /** ms a Redis command (an XADD) may take, queued or sent, before the call fails; also bounds the first call's connect. Default 5000. */
  commandTimeout?: number;
  /** Reply stream key prefix: `<replyPrefix>{<uuid>}:replies`. Default `'nestjs-redis-streams:'`. */
  replyPrefix?: string;
  /** ms the reply stream outlives this client (renewed every third of it). Default 60000. */
  replyTtl?: number;
  /** ms between TIME calls that re-measure the server clock for `maxAge` trimming. Default 60000. */
  clockRefreshInterval?: number;
  /** Nest serializer applied to the outgoing packet `{ pattern, data, id?, metadata? }`. */
  serializer?: Serializer;
  /**
   * Nest deserializer applied to each reply: `{ id, response?, err?, isDisposed }` (the parsed
   * `packet`), or with `rawReplies` the `RawReply` as read. Returns `{ response?, err?, isDisposed? }`.
   */
  deserializer?: Deserializer;
  /**
   * Replies are read as bytes and handed to the `deserializer` unparsed, as a `RawReply` (`id`,
   * `packet` and every field as Buffers): for responders that answer with bytes (a server
   * `serializer` returning a Buffer). Default false: `packet` is parsed as JSON.
   */
  rawReplies?: boolean;
  /**
   * OpenTelemetry producer spans (trace context written into each entry's headers) and the sent
   * counter, when `@opentelemetry/api` is installed and a provider is registered before the
   * first `connect()`. `false` turns them off. Default on.
   */
  telemetry?: boolean | TelemetryOptions;
  /**
   * Retry-safe emits (Redis 8.6+, capability `idmp`): every emit carries an idempotency key (its
   * record's `idempotencyKey`, else `IDMPAUTO`) under this client's producer id, and a failed or
   * timed-out emit is sent again with the same key. `true` for the defaults. On a server without
   * IDMP the first connect fails with `RedisStreamsCapabilityError`. Default off (no retry).
   */
  idempotence?: boolean | IdempotenceOptions;
  /**
   * Partitioned streams (normalized pattern → count, 1 to 1024): emits and sends of the pattern go
   * to `<stream>:p0` … `<stream>:p<count-1>`, by the record's `partitionKey` (one key, one
   * partition), else its `idempotencyKey`, else (IDMPAUTO emits) a hash of its content, else round
   * robin. The handlers must set the same `extras.partitions`; a different
   * count is a `RedisStreamsPartitionMismatchError` on the emit or send. See docs/high-availability.md.
   */
  partitions?: Record<string, number>;
  /**
   * Priority lanes (normalized pattern → lane names, highest first, as the handler's
   * `extras.priorities`): emits and sends of the pattern go to `<stream>:<priority>` by the
   * record's `priority`, and without one to the middle lane (`normal` of
   * `['high', 'normal', 'low']`, `low` of `['high', 'low']`). A `priority` that is not a lane of
   * its pattern, or on a pattern without lanes, is a `RedisStreamsOptionError`. Not with
   * `partitions` for the same pattern. See docs/client.md#priorities.
   */
  priorities?: Record<string, readonly string[]>;
}

export interface ResolvedClientOptions {
  readonly connection: RedisConnection | undefined;
  readonly streamPrefix: string;
  readonly trim: CompiledTrimming;
  readonly trimming: ReadonlyMap<string, CompiledTrimming>;
  readonly noMkStream: boolean;
  readonly timeout: number;
  readonly rawReplies: boolean;
  readonly commandTimeout: number;
  readonly replyPrefix: string;
  readonly replyTtl: number;
  readonly clockRefreshInterval: number;
  readonly telemetry: ResolvedTelemetryOptions;
  /** The IDMP producer id of this client (given, else random per instance). */
  readonly producerId: string;
  readonly idempotence: ResolvedIdempotence | undefined;
  /** Partitioned patterns only (count > 1). */
  readonly partitions: ReadonlyMap<string, number>;
  /** Patterns with priority lanes → the lanes, highest first. */
  readonly priorities: ReadonlyMap<string, readonly string[]>;
}

const KNOWN = new Set([
  'connection',
  'streamPrefix',
  'trim',
  'trimming',
  'noMkStream',
  'timeout',
  'commandTimeout',
  'replyPrefix',
  'replyTtl',
  'clockRefreshInterval',
  'serializer',
  'deserializer',
  'rawReplies',
  'telemetry',
  'idempotence',
  'partitions',
  'priorities',
  // ClientsModule passes `name` through when it is written inside options; harmless.
  'name',
]);

/** Validates every option before any connection is opened. */
export function resolveClientOptions(options: RedisStreamsClientOptions = {}): ResolvedClientOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedisStreamsOptionError('options', `must be an object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new RedisStreamsOptionError(key, 'is not a RedisStreamsClient option');
  }
  const trimming = new Map<string, CompiledTrimming>();
  if (options.trimming !== undefined) {
    if (options.trimming === null || typeof options.trimming !== 'object') {
      throw new RedisStreamsOptionError('trimming', `must be an object of pattern → trimming, got ${describe(options.trimming)}`);
    }
    for (const [pattern, value] of Object.entries(options.trimming)) {
      trimming.set(pattern, compileTrimming(`trimming.${pattern}`, value));
    }
  }
  const streamPrefix = stringOption('streamPrefix', options.streamPrefix, '');
  const partitions = partitionsOption(options.partitions, streamPrefix);
  return {
    connection: connectionOption('connection', options.connection),
    streamPrefix,
    trim: compileTrimming('trim', options.trim ?? DEFAULT_TRIMMING),
    trimming,
    noMkStream: booleanOption('noMkStream', options.noMkStream, false),
    timeout: timerMillisOption('timeout', options.timeout, 30_000, 1),
    rawReplies: booleanOption('rawReplies', options.rawReplies, false),
    commandTimeout: timerMillisOption('commandTimeout', options.commandTimeout, 5_000, 1),
    replyPrefix: stringOption('replyPrefix', options.replyPrefix, 'nestjs-redis-streams:'),
    replyTtl: timerMillisOption('replyTtl', options.replyTtl, 60_000, 1_000),
    clockRefreshInterval: timerMillisOption('clockRefreshInterval', options.clockRefreshInterval, 60_000, 1_000),
    telemetry: resolveTelemetryOptions(options.telemetry),
    ...idempotenceOptions(options.idempotence),
    partitions,
    priorities: prioritiesOption(options.priorities, partitions),
  };
}

function prioritiesOption(value: unknown, partitions: ReadonlyMap<string, number>): Map<string, readonly string[]> {
  const priorities = new Map<string, readonly string[]>();
  if (value === undefined) return priorities;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('priorities', `must be an object of pattern → lane names (highest first), got ${describe(value)}`);
  }
  for (const [pattern, given] of Object.entries(value)) {
    const lanes = priorityLanesOption(`priorities.${pattern}`, given) as readonly string[];
    if (partitions.has(pattern)) {
      throw new RedisStreamsOptionError(`priorities.${pattern}`, 'cannot be combined with partitions for the same pattern: give it lanes or partitions, not both');
    }
    priorities.set(pattern, lanes);
  }
  return priorities;
}

function partitionsOption(value: unknown, streamPrefix: string): Map<string, number> {
  const partitions = new Map<string, number>();
  if (value === undefined) return partitions;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('partitions', `must be an object of pattern → partition count, got ${describe(value)}`);
  }
  for (const [pattern, given] of Object.entries(value)) {
    const count = partitionCountOption(`partitions.${pattern}`, given);
    checkPartitionable(`partitions.${pattern}`, streamKeyFor(pattern, streamPrefix), count);
    if (count > 1) partitions.set(pattern, count);
  }
  return partitions;
}

function stringOption(option: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new RedisStreamsOptionError(option, `must be a string, got ${describe(value)}`);
  return value;
}

function idempotenceOptions(value: unknown): { producerId: string; idempotence: ResolvedIdempotence | undefined } {
  const { producerId, idempotence } = resolveIdempotence(value);
  return { producerId: producerId ?? newProducerId(), idempotence };
}
