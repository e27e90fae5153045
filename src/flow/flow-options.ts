import { timerDurationOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption } from '../validation.js';

/** A per-key limit's key of an entry (a tenant, a customer), from its decoded payload and its context. */
export type RateLimitKey = (payload: unknown, ctx: unknown) => string;

/** `extras.rateLimit`: at most `max` entries of this handler started per `per`, over every worker of its group. */
export interface RateLimitOption<Context = unknown> {
  /** Entries per period (≥ 1). */
  max: number;
  /** The period: ms or an ISO-8601 duration (`PT1S`). */
  per: number | string;
  /**
   * One limit per key instead of one for the handler (per tenant): `(payload, ctx) => string`. An
   * entry whose key has no token left is held in Redis (not run, its delivery not counted) and
   * comes back when the key has one. See docs/flow-control.md.
   */
  key?(payload: unknown, ctx: Context): string;
}

/**
 * `extras.globalConcurrency`: at most `max` entries of this handler held (read and not yet
 * settled) over every worker of its group. A number is `{ max }`. `lease`: how long a worker's
 * permits outlive it when it dies without giving them back (ms or ISO-8601; default 30 s).
 */
export type GlobalConcurrencyOption = number | { max: number; lease?: number | string };

export interface ResolvedRateLimit {
  readonly max: number;
  readonly perMs: number;
  /** Set for a per-key limit. */
  readonly key: RateLimitKey | undefined;
}

export interface ResolvedGlobalConcurrency {
  readonly max: number;
  readonly leaseMs: number;
}

export const DEFAULT_PERMIT_LEASE_MS = 30_000;
/** Shorter leases would be renewed many times a second per worker. */
const MIN_PERMIT_LEASE_MS = 1_000;

export function resolveRateLimit(option: string, value: unknown): ResolvedRateLimit | undefined {
  if (value === undefined) return undefined;
  const { max, per, key } = objectWith(option, value, ['max', 'per', 'key'], '{ max, per, key? }');
  if (max === undefined) throw new RedisStreamsOptionError(`${option}.max`, 'is required (entries per period)');
  if (per === undefined) throw new RedisStreamsOptionError(`${option}.per`, 'is required (the period: ms or ISO-8601 such as PT1S)');
  if (key !== undefined && typeof key !== 'function') {
    throw new RedisStreamsOptionError(`${option}.key`, `must be a function (payload, ctx) => string, got ${describe(key)}`);
  }
  return { max: integerOption(`${option}.max`, max, 0, 1), perMs: timerDurationOption(`${option}.per`, per), key: key as RateLimitKey | undefined };
}

export function resolveGlobalConcurrency(option: string, value: unknown): ResolvedGlobalConcurrency | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return { max: integerOption(option, value, 0, 1), leaseMs: DEFAULT_PERMIT_LEASE_MS };
  const { max, lease } = objectWith(option, value, ['max', 'lease'], 'a number or { max, lease? }');
  if (max === undefined) throw new RedisStreamsOptionError(`${option}.max`, 'is required (entries held at once over every worker)');
  const leaseMs = lease === undefined ? DEFAULT_PERMIT_LEASE_MS : timerDurationOption(`${option}.lease`, lease);
  if (leaseMs < MIN_PERMIT_LEASE_MS) throw new RedisStreamsOptionError(`${option}.lease`, `must be at least ${MIN_PERMIT_LEASE_MS} ms, got ${leaseMs}`);
  return { max: integerOption(`${option}.max`, max, 0, 1), leaseMs };
}

function objectWith(option: string, value: unknown, keys: readonly string[], shape: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be ${shape}, got ${describe(value)}`);
  }
  const unknown = Object.keys(value).find((key) => !keys.includes(key));
  if (unknown !== undefined) throw new RedisStreamsOptionError(`${option}.${unknown}`, `is not an option here (${keys.join(', ')})`);
  return value as Record<string, unknown>;
}
