import type { SharedRateLimit, TokenGrant } from '../flow/shared-rate-limit.js';
import { refundTokens, type BindingLimits } from './binding-limits.js';
import { EntryState, type InFlightEntry } from './in-flight.js';

/**
 * A rate-limit token serves a start only this share of the limit's `per` after it was taken, so no
 * entry starts on a token the bucket has had time to refill (busy handlers between).
 */
const FRESH_SHARE_OF_PER = 50;


/**
 * Tokens count starts, but a rate-limited read (stream-reader.ts readLimited) takes its tokens
 * for a whole read (up to `readBatch`), and entries queued behind busy handlers start later. So
 * the entries of a read still waiting for a handler once its tokens are no longer fresh give
 * their tokens back (one refund for all of them) and each takes a fresh one when it starts
 * (`takeStartToken`, entry-handling.ts). Refunded when they go stale, not when the entry starts:
 * given back and taken again at once, the old token would count as spent back then. A batch
 * binding's entries are not tracked: a batch starts as one, when its gate says.
 */
export class LateStarts {
  private readonly freshMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly rate: SharedRateLimit) {
    this.freshMs = rate.limit.perMs / FRESH_SHARE_OF_PER;
  }

  /**
   * A read's entries, just handed to the lanes, their tokens taken at `takenAt` (performance.now()):
   * those not started once the tokens are no longer fresh go stale.
   */
  read(admitted: readonly InFlightEntry[], takenAt: number): void {
    const entries = admitted.filter((entry) => entry.state === EntryState.Queued);
    if (entries.length === 0) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.expire(entries);
    }, Math.max(0, takenAt + this.freshMs - performance.now()));
    timer.unref();
    this.timers.add(timer);
  }

  /** The reader stopped: the entries left are handed off at close(), never started here. */
  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private expire(entries: readonly InFlightEntry[]): void {
    let stale = 0;
    for (const entry of entries) {
      if (entry.state !== EntryState.Queued || !entry.held) continue;
      entry.needsStartToken = true;
      stale++;
    }
    refundTokens(this.rate, stale);
  }
}

/** A fresh token for an entry whose read's token went stale (`LateStarts`): of its binding's rate limit. */
export function takeStartToken(entry: InFlightEntry): Promise<TokenGrant> {
  return ((entry.binding.limits as BindingLimits).rate as SharedRateLimit).take(1);
}
