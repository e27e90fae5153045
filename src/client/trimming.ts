import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption } from '../validation.js';

/**
 * How XADD trims the stream it writes to.
 * - `{ maxLen }`: keep about the newest `maxLen` entries (`MAXLEN ~`), or exactly that many with `exact: true`;
 * - `{ maxAge }`: drop entries older than `maxAge` (milliseconds or an ISO-8601 duration such as `PT10M`),
 *   measured on the Redis server's clock (`MINID ~ <server time - maxAge>`);
 * - `false`: no trimming.
 *
 * With `onlyAcked: true` (Redis 8.2+, XADD's `ACKED` policy) trimming deletes only entries that
 * every consumer group has read and acknowledged: an entry a lagging group still needs is kept,
 * so the stream can grow above `maxLen` (or keep entries older than `maxAge`) while a group lags.
 */
export type StreamTrimming = false | MaxLenTrimming | MaxAgeTrimming;

export interface MaxLenTrimming {
  maxLen: number;
  /** `MAXLEN =` instead of `MAXLEN ~`. Exact trimming costs more CPU on Redis; default false. */
  exact?: boolean;
  /** Trim only entries every group read and acknowledged (`ACKED`, Redis 8.2+); default false. */
  onlyAcked?: boolean;
}

export interface MaxAgeTrimming {
  maxAge: number | string;
  /** `MINID =` instead of `MINID ~`; default false. */
  exact?: boolean;
  /** Trim only entries every group read and acknowledged (`ACKED`, Redis 8.2+); default false. */
  onlyAcked?: boolean;
}

export const DEFAULT_TRIMMING: MaxLenTrimming = { maxLen: 100_000 };

/**
 * A validated trimming, ready to produce XADD arguments. `args` of `maxLen` is the whole trim
 * clause (`MAXLEN ~ n`, then `ACKED` with `onlyAcked`).
 */
export type CompiledTrimming =
  | { readonly kind: 'none'; readonly args: readonly string[]; readonly onlyAcked: false }
  | { readonly kind: 'maxLen'; readonly args: readonly string[]; readonly onlyAcked: boolean }
  | { readonly kind: 'maxAge'; readonly ageMs: number; readonly operator: '~' | '='; readonly onlyAcked: boolean };

const NO_TRIMMING: CompiledTrimming = { kind: 'none', args: [], onlyAcked: false };

/** What `onlyAcked` needs from the server (XADD's deletion policies). */
export const ONLY_ACKED_REQUIREMENT = { capability: 'deletionPolicies', since: '8.2', feature: 'XADD … ACKED' } as const;

/** Validates once, so the hot path only copies a ready-made argument list. */
export function compileTrimming(option: string, value: unknown): CompiledTrimming {
  if (value === false) return NO_TRIMMING;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be false, { maxLen } or { maxAge }, got ${describe(value)}`);
  }
  const { maxLen, maxAge, exact, onlyAcked } = value as { maxLen?: unknown; maxAge?: unknown; exact?: unknown; onlyAcked?: unknown };
  if (exact !== undefined && typeof exact !== 'boolean') {
    throw new RedisStreamsOptionError(`${option}.exact`, `must be true or false, got ${describe(exact)}`);
  }
  if (onlyAcked !== undefined && typeof onlyAcked !== 'boolean') {
    throw new RedisStreamsOptionError(`${option}.onlyAcked`, `must be true or false, got ${describe(onlyAcked)}`);
  }
  const acked = onlyAcked === true;
  const operator = exact ? '=' : '~';
  if (maxLen !== undefined && maxAge !== undefined) {
    throw new RedisStreamsOptionError(option, 'give either maxLen or maxAge, not both');
  }
  if (maxLen !== undefined) {
    const n = integerOption(`${option}.maxLen`, maxLen, 0, 0);
    return { kind: 'maxLen', args: acked ? ['MAXLEN', operator, String(n), 'ACKED'] : ['MAXLEN', operator, String(n)], onlyAcked: acked };
  }
  if (maxAge !== undefined) {
    return { kind: 'maxAge', ageMs: durationMillisOption(`${option}.maxAge`, maxAge), operator, onlyAcked: acked };
  }
  throw new RedisStreamsOptionError(option, 'must contain maxLen or maxAge (or be false for no trimming)');
}

/** The `MINID` arguments for an age, given the server's current time in milliseconds. */
export function minIdArgs(trimming: { ageMs: number; operator: '~' | '='; onlyAcked?: boolean }, serverNowMs: number): string[] {
  const args = ['MINID', trimming.operator, String(Math.max(0, Math.floor(serverNowMs - trimming.ageMs)))];
  if (trimming.onlyAcked === true) args.push('ACKED');
  return args;
}
