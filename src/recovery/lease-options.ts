import { timerDurationOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { booleanOption, describe } from '../validation.js';

/**
 * `recovery.leases`: `true` (default), `false` (no renewal timer), or `{ thread?, maxBlocked? }`
 * (on, with the lease thread's settings). See docs/recovery.md, "Leases".
 */
export type LeasesOption = boolean | { thread?: boolean; maxBlocked?: number | string };

export interface ResolvedLeases {
  /** Renew on a timer at all. */
  readonly enabled: boolean;
  /** Renew from a worker thread with its own connection (on unless `thread: false`). */
  readonly thread: boolean;
  /** The thread stops renewing once the event loop has not answered for this long, in ms. */
  readonly maxBlocked: number;
}

/** Default `maxBlocked`: a handler may block the event loop this long before its entries go back to the group. */
export const DEFAULT_MAX_BLOCKED_MS = 300_000;
/** Below this, ordinary GC pauses would look like a wedged process. */
export const MIN_MAX_BLOCKED_MS = 1_000;

export function resolveLeasesOption(option: string, value: unknown): ResolvedLeases {
  if (value === undefined || typeof value === 'boolean') {
    return { enabled: booleanOption(option, value, true), thread: true, maxBlocked: DEFAULT_MAX_BLOCKED_MS };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be true, false or { thread?, maxBlocked? }, got ${describe(value)}`);
  }
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (key !== 'thread' && key !== 'maxBlocked') throw new RedisStreamsOptionError(`${option}.${key}`, 'is not a leases option (thread, maxBlocked)');
  }
  const thread = booleanOption(`${option}.thread`, given.thread, true);
  if (!thread && given.maxBlocked !== undefined) {
    throw new RedisStreamsOptionError(`${option}.maxBlocked`, 'bounds the lease thread; it has no meaning with thread: false');
  }
  const maxBlocked = given.maxBlocked === undefined ? DEFAULT_MAX_BLOCKED_MS : timerDurationOption(`${option}.maxBlocked`, given.maxBlocked);
  if (maxBlocked < MIN_MAX_BLOCKED_MS) {
    throw new RedisStreamsOptionError(`${option}.maxBlocked`, `must be at least ${MIN_MAX_BLOCKED_MS} ms, got ${maxBlocked}`);
  }
  return { enabled: true, thread, maxBlocked };
}
