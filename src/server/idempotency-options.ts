import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisStreamsContext } from './context.js';
import { describe } from '../validation.js';

/**
 * Consumer-side idempotency of one handler (`extras.idempotency`): a processed key is recorded
 * with its acknowledgement, and an entry whose key is recorded is acknowledged without running the
 * handler. `true`: the key is the entry id, kept 24 hours.
 */
export type IdempotencyOption =
  | boolean
  | {
      /** The key of an entry, e.g. `(order) => order.orderId`; default: the entry id. */
      key?: (payload: unknown, ctx: RedisStreamsContext) => string;
      /** How long a processed key is remembered: ms or ISO-8601 (`P1D`). Default 24 hours. */
      ttl?: number | string;
    };

export interface ResolvedIdempotency {
  readonly key: ((payload: unknown, ctx: RedisStreamsContext) => string) | undefined;
  readonly ttlMs: number;
}

export const DEFAULT_IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export function resolveIdempotency(option: string, value: unknown): ResolvedIdempotency | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { key: undefined, ttlMs: DEFAULT_IDEMPOTENCY_TTL_MS };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be true, false or { key?, ttl? }, got ${describe(value)}`);
  }
  const { key, ttl, ...rest } = value as { key?: unknown; ttl?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`${option}.${unknown}`, 'is not an idempotency option (key, ttl)');
  if (key !== undefined && typeof key !== 'function') {
    throw new RedisStreamsOptionError(`${option}.key`, `must be a function (payload, ctx) => string, got ${describe(key)}`);
  }
  const ttlMs = ttl === undefined ? DEFAULT_IDEMPOTENCY_TTL_MS : durationMillisOption(`${option}.ttl`, ttl);
  if (ttlMs < 1) throw new RedisStreamsOptionError(`${option}.ttl`, 'must be at least 1 ms');
  return { key: key as ResolvedIdempotency['key'], ttlMs };
}
