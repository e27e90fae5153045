import { RedisStreamsOptionError } from '../errors.js';
import type { LivenessSource } from '../server/liveness.js';
import { describe, integerOption } from '../validation.js';
import type { LivenessLimits, RedisStreamsHealthThresholds } from './health-verdict.js';

/** Options of `RedisStreamsHealthIndicator.isHealthy()` / `isAlive()`. */
export interface RedisStreamsHealthOptions {
  /** The server to check (a `RedisStreamsServer`). Default: every server listening in this process. */
  server?: LivenessSource;
  /**
   * A read loop is stuck when a read stays blocked, or no read returns, for longer than the
   * server's `blockMs` plus this, in ms. Default 10000.
   */
  readGraceMs?: number;
  /** `isHealthy`: down once more recovery ticks than this failed in a row. Default 2. */
  maxFailedRecoveryTicks?: number;
  /** `isHealthy`: PING and the count queries must answer within this, in ms. Default 2000. */
  timeoutMs?: number;
  /** `isHealthy`: upper bounds of lag / pending / dead letters / delayed entries due and not promoted, for every stream + group or per stream + group. */
  thresholds?: RedisStreamsHealthThresholds | ((stream: string, group: string) => RedisStreamsHealthThresholds | undefined);
}

export interface ResolvedHealthOptions extends LivenessLimits {
  readonly server: LivenessSource | undefined;
  readonly timeoutMs: number;
  readonly thresholds: ((stream: string, group: string) => RedisStreamsHealthThresholds | undefined) | undefined;
}

const THRESHOLD_NAMES = ['lag', 'pending', 'deadLetters', 'delayedDue'] as const;

export function resolveHealthOptions(options: RedisStreamsHealthOptions = {}): ResolvedHealthOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedisStreamsOptionError('options', `must be an object, got ${describe(options)}`);
  }
  const server = options.server;
  if (server !== undefined && (server === null || typeof (server as Partial<LivenessSource>).liveness !== 'function')) {
    throw new RedisStreamsOptionError('server', `must be a RedisStreamsServer, got ${describe(server)}`);
  }
  return {
    server,
    readGraceMs: integerOption('readGraceMs', options.readGraceMs, 10_000, 0),
    maxFailedRecoveryTicks: integerOption('maxFailedRecoveryTicks', options.maxFailedRecoveryTicks, 2, 0),
    timeoutMs: integerOption('timeoutMs', options.timeoutMs, 2_000, 1),
    thresholds: thresholdsOption(options.thresholds),
  };
}

function thresholdsOption(value: RedisStreamsHealthOptions['thresholds']): ResolvedHealthOptions['thresholds'] {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value;
  if (value === null || typeof value !== 'object') {
    throw new RedisStreamsOptionError('thresholds', `must be an object or a function, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!(THRESHOLD_NAMES as readonly string[]).includes(key)) throw new RedisStreamsOptionError(`thresholds.${key}`, 'is not a threshold (lag, pending, deadLetters, delayedDue)');
  }
  for (const name of THRESHOLD_NAMES) integerOption(`thresholds.${name}`, value[name], 0, 0);
  return () => value;
}
