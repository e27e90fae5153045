import type { RedisClient } from '../redis/connection.js';
import { CRON_OCCURRENCES, CRON_REFILL_BELOW, occurrencesAfter, type CronRule } from './cron-rule.js';
import { delayedKeys, PROMOTED_KEEP_MS } from './delayed-keys.js';
import { delayedScripts } from './scripts/loader.js';

/** Most due entries one promotion call moves: a script blocks Redis while it runs. */
export const DEFAULT_PROMOTION_BATCH = 100;

export interface PromotionResult {
  /** Entries added to the stream by this call: hold id → new entry id (empty with `listIds: false`). */
  readonly promoted: { readonly hold: string; readonly id: string }[];
  /** How many entries this call added to the stream. */
  readonly added: number;
  /** Holds removed without an entry: `dropped` (NOMKSTREAM and no stream), `missing` (no body), `invalid` (unreadable body, kept in the bodies hash). */
  readonly skipped: { readonly hold: string; readonly status: 'dropped' | 'missing' | 'invalid' }[];
  /** Redis' clock at the call, in Unix ms. */
  readonly nowMs: number;
  /** When the next held entry is due (Unix ms, Redis' clock), `undefined` when none is held. */
  readonly nextDueMs: number | undefined;
  /** The call moved as many as it was allowed: more may be due now. */
  readonly full: boolean;
  /** Cron entries that were running low on listed occurrences: topped up by this call (refill.lua). */
  readonly refilled: readonly string[];
}

/**
 * Moves up to `limit` due delayed entries of `stream` into it (promote.lua), each exactly once
 * however many callers race for it, then tops up the occurrences of the cron entries running low
 * (computed here: Lua in Redis cannot read cron expressions). A caller that dies in between
 * leaves them to the next promotion, which asks again while fewer than {@link CRON_REFILL_BELOW}
 * are left.
 */
export async function promoteDue(client: RedisClient, stream: string, limit = DEFAULT_PROMOTION_BATCH, { listIds = true }: { listIds?: boolean } = {}): Promise<PromotionResult> {
  const { schedule, bodies, promoted: promotedIds, promotedAt } = delayedKeys(stream);
  const reply = await delayedScripts(client).nrsDelayedPromote(stream, schedule, bodies, promotedIds, promotedAt, limit, CRON_REFILL_BELOW, listIds ? '1' : '0', PROMOTED_KEEP_MS);
  const nowMs = Number(reply[0]);
  const next = Number(reply[1]);
  const added = Number(reply[2]);
  const promoted: { hold: string; id: string }[] = [];
  const skipped: { hold: string; status: 'dropped' | 'missing' | 'invalid' }[] = [];
  const refills: Promise<{ hold: string; dueMs: number | undefined }>[] = [];
  for (let i = 3; i + 1 < reply.length; i += 2) {
    const hold = String(reply[i]);
    const outcome = reply[i + 1];
    if (Array.isArray(outcome)) {
      const [, expression, timezone, lastMs] = outcome.map(String) as [string, string, string, string];
      refills.push(refillOccurrences(client, stream, hold, { expression, timezone }, Math.max(Number(lastMs), nowMs)).then((dueMs) => ({ hold, dueMs })));
    } else if (outcome === 'dropped' || outcome === 'missing' || outcome === 'invalid') skipped.push({ hold, status: outcome });
    else promoted.push({ hold, id: String(outcome) });
  }
  const toppedUp = await Promise.all(refills);
  // A parked cron entry topped up is due at its first occurrence, maybe before the next due time the script saw.
  const dues = [next, ...toppedUp.map(({ dueMs }) => dueMs ?? -1)].filter((due) => due >= 0);
  const nextDueMs = dues.length === 0 ? undefined : Math.min(...dues);
  return { promoted, added, skipped, nowMs, nextDueMs, full: added + skipped.length >= limit, refilled: toppedUp.map(({ hold }) => hold) };
}

/**
 * Appends the occurrences of `rule` after `afterMs` (the asking promotion's time on Redis' clock,
 * or the last occurrence it listed) to the cron entry `hold` (refill.lua: only while it still has
 * that rule; one that came due since is kept); resolves with its due time then, `undefined` when
 * it was left alone.
 */
export async function refillOccurrences(client: RedisClient, stream: string, hold: string, rule: CronRule, afterMs: number): Promise<number | undefined> {
  const { schedule, bodies } = delayedKeys(stream);
  const occurrences = occurrencesAfter(rule, afterMs, CRON_OCCURRENCES);
  const [, dueMs] = await delayedScripts(client).nrsDelayedRefill(schedule, bodies, hold, rule.expression, rule.timezone, CRON_OCCURRENCES, afterMs, ...occurrences);
  return Number(dueMs) < 0 ? undefined : Number(dueMs);
}
