import type { ResolvedRetryPolicy } from './retry-policy.js';

/** Retry ticks never come closer than this: each one is an XPENDING per stream with a policy. */
export const MIN_RETRY_TICK_MS = 50;
/** What a function policy counts as its shortest wait (it is unknown); `recovery.interval` ticks faster. */
export const FUNCTION_POLICY_TICK_BASE_MS = 1_000;

/**
 * Time between recovery's timer ticks when some stream has a retry policy: a quarter of the
 * shortest wait in use (so an entry is retried at most ~25 % late), at least 50 ms, never more
 * than `interval`. `undefined` when no stream has a policy: ticks every `interval` as without retries.
 */
export function retryTickInterval(policies: readonly (ResolvedRetryPolicy | undefined)[], interval: number): number | undefined {
  const shortest = policies.filter((policy) => policy !== undefined).map((policy) => policy.shortest ?? FUNCTION_POLICY_TICK_BASE_MS);
  if (shortest.length === 0) return undefined;
  return Math.min(interval, Math.max(MIN_RETRY_TICK_MS, Math.floor(Math.min(...shortest) / 4)));
}
