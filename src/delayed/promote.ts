import type { RedisClient } from '../redis/connection.js';
import { delayedKeys } from './delayed-keys.js';
import { delayedScripts } from './scripts/loader.js';

/** Most due entries one promotion call moves: a script blocks Redis while it runs. */
export const DEFAULT_PROMOTION_BATCH = 100;

export interface PromotionResult {
  /** Entries added to the stream by this call: hold id → new entry id. */
  readonly promoted: { readonly hold: string; readonly id: string }[];
  /** Holds removed without an entry: `dropped` (NOMKSTREAM and no stream), `missing` (no body), `invalid` (unreadable body, kept in the bodies hash). */
  readonly skipped: { readonly hold: string; readonly status: 'dropped' | 'missing' | 'invalid' }[];
  /** Redis' clock at the call, in Unix ms. */
  readonly nowMs: number;
  /** When the next held entry is due (Unix ms, Redis' clock), `undefined` when none is held. */
  readonly nextDueMs: number | undefined;
  /** The call moved as many as it was allowed: more may be due now. */
  readonly full: boolean;
}

/**
 * Moves up to `limit` due delayed entries of `stream` into it (promote.lua), each exactly once
 * however many callers race for it.
 */
export async function promoteDue(client: RedisClient, stream: string, limit = DEFAULT_PROMOTION_BATCH): Promise<PromotionResult> {
  const { schedule, bodies } = delayedKeys(stream);
  const reply = await delayedScripts(client).nrsDelayedPromote(stream, schedule, bodies, limit);
  const nowMs = Number(reply[0]);
  const next = Number(reply[1]);
  const promoted: { hold: string; id: string }[] = [];
  const skipped: { hold: string; status: 'dropped' | 'missing' | 'invalid' }[] = [];
  for (let i = 2; i + 1 < reply.length; i += 2) {
    const hold = String(reply[i]);
    const outcome = String(reply[i + 1]);
    if (outcome === 'dropped' || outcome === 'missing' || outcome === 'invalid') skipped.push({ hold, status: outcome });
    else promoted.push({ hold, id: outcome });
  }
  return { promoted, skipped, nowMs, nextDueMs: next < 0 ? undefined : next, full: promoted.length + skipped.length >= limit };
}
