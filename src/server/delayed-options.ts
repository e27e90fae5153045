import { DEFAULT_PROMOTION_BATCH } from '../delayed/promote.js';
import { timerDurationOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe, integerOption } from '../validation.js';

/** Promotion of delayed entries by this worker (the `delayed` server option, docs/scheduling.md). */
export interface DelayedOptions {
  /**
   * Longest time between promotions of the streams this worker reads: ms or ISO-8601. A worker also
   * wakes when the next held entry it saw is due, so this bounds how late an entry held after that
   * look can be. Default 1000 ms.
   */
  interval?: number | string;
  /** Most due entries one promotion call moves (one Lua script: it blocks Redis while it runs). Default 100 (1..1000). */
  batch?: number;
  /** Calls per stream in one promotion round while each moves a full batch. Default 10 (1..1000). */
  maxPages?: number;
}

export interface ResolvedDelayedOptions {
  readonly intervalMs: number;
  readonly batch: number;
  readonly maxPages: number;
}

export const DEFAULT_PROMOTION_INTERVAL = 1_000;

/** `false`: this worker promotes nothing (another must, or held entries stay held). */
export function resolveDelayedOptions(value: unknown): ResolvedDelayedOptions | undefined {
  if (value === false) return undefined;
  if (value === undefined) return { intervalMs: DEFAULT_PROMOTION_INTERVAL, batch: DEFAULT_PROMOTION_BATCH, maxPages: 10 };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('delayed', `must be false or { interval?, batch?, maxPages? }, got ${describe(value)}`);
  }
  const { interval, batch, maxPages, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new RedisStreamsOptionError(`delayed.${unknown}`, 'is not a delayed option (interval, batch, maxPages)');
  return {
    intervalMs: interval === undefined ? DEFAULT_PROMOTION_INTERVAL : timerDurationOption('delayed.interval', interval),
    batch: integerOption('delayed.batch', batch, DEFAULT_PROMOTION_BATCH, 1, 1000),
    maxPages: integerOption('delayed.maxPages', maxPages, 10, 1, 1000),
  };
}
