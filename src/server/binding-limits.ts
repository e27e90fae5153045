import type { GlobalPermits } from '../flow/global-permits.js';
import type { SharedRateLimit, TokenGrant, TokenSource } from '../flow/shared-rate-limit.js';

/** A binding's shared limits (one object for every partition of a pattern in one group; server-flow.ts builds them). */
export interface BindingLimits {
  /** `extras.rateLimit` without a key: its reader takes tokens before it reads. */
  readonly rate: SharedRateLimit | undefined;
  /** `extras.rateLimit` with a key: each entry takes a token of its key's bucket before its handler runs. */
  readonly perKey: SharedRateLimit | undefined;
  readonly permits: GlobalPermits | undefined;
}

/** What the limits granted: entries that may be taken now; when none, what ran short (a wait of `waitMs` for tokens). */
export type LimitsGrant = { readonly granted: number } & ({ readonly short?: undefined } | { readonly short: 'permits' } | { readonly short: 'tokens'; readonly waitMs: number });

/**
 * Asks a binding's shared limits for up to `wanted` entries (a read's, or a claim's): permits
 * first, at most `permitRoom` (what this worker may hold), then rate-limit tokens for those; what
 * one of them refused of the other's grant goes back. A token request that fails gives the permits
 * just taken back before it throws: kept, they would be renewed for good and stop the handler.
 * `tokens`: where the tokens come from (a reader's read-tokens.ts), by default the bucket itself.
 * Answered at once, without a promise, when the token source has the tokens in hand and no permit
 * is asked for (a rate-limited read that makes no call: no promise hop either).
 */
export function grantFromLimits(
  limits: BindingLimits,
  wanted: number,
  permitRoom: number,
  tokens: TokenSource | undefined = limits.rate,
): LimitsGrant | Promise<LimitsGrant> {
  const { permits } = limits;
  return permits === undefined ? grantTokens(limits, wanted, tokens) : grantPermitsThenTokens(limits, permits, Math.min(wanted, permitRoom), tokens);
}

async function grantPermitsThenTokens(limits: BindingLimits, permits: GlobalPermits, room: number, tokens: TokenSource | undefined): Promise<LimitsGrant> {
  const granted = room > 0 ? await permits.acquire(room) : 0;
  if (granted === 0) return { granted, short: 'permits' };
  return grantTokens(limits, granted, tokens);
}

/** Tokens for `granted` entries (their permits, if any, taken): what the tokens cut of them goes back to the permits. */
function grantTokens(limits: BindingLimits, granted: number, tokens: TokenSource | undefined): LimitsGrant | Promise<LimitsGrant> {
  if (tokens === undefined) return { granted };
  const taken = tokens.take(granted);
  if (!(taken instanceof Promise)) return limitedByTokens(limits, granted, taken);
  return taken.then(
    (grant) => limitedByTokens(limits, granted, grant),
    (error: unknown) => {
      limits.permits?.release(granted);
      throw error;
    },
  );
}

function limitedByTokens(limits: BindingLimits, granted: number, tokens: TokenGrant): LimitsGrant {
  if (tokens.granted < granted) limits.permits?.release(granted - tokens.granted);
  return tokens.granted === 0 ? { granted: 0, short: 'tokens', waitMs: tokens.waitMs } : { granted: tokens.granted };
}

/**
 * Gives back `count` entries of a grant that no entry used: permits at once, tokens refunded (a
 * refund that fails loses them: the limit errs on the slow side). `keepTokens`: a read whose
 * outcome is unknown (sent, no reply) may have run, so its tokens stay spent; its permits go back,
 * no entry of it being in hand.
 */
export function returnGrant(limits: BindingLimits, count: number, keepTokens = false): void {
  if (count <= 0) return;
  limits.permits?.release(count);
  if (!keepTokens) refundTokens(limits.rate, count);
}

/** Gives back tokens a read did not use; a failure loses them: the limit errs on the slow side. */
export function refundTokens(rate: SharedRateLimit | undefined, unused: number): void {
  if (rate === undefined || unused <= 0) return;
  rate.refund(unused).catch(() => undefined);
}
