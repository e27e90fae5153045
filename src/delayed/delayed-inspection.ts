import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { redisNow } from '../redis/server-time.js';
import { integerOption } from '../validation.js';
import { delayedKeys } from './delayed-keys.js';
import { inDueOrder } from './due-order.js';
import { DEFAULT_PROMOTION_BATCH, promoteDue, type PromotionResult } from './promote.js';
import { delayedScripts } from './scripts/loader.js';

/**
 * The operator's view of a stream's delayed entries (CLI `delayed count|list|promote|remove`):
 * read on Redis' clock, changed only through the same keys and scripts the workers use, so a
 * promotion or removal here races the workers' safely.
 */

export interface DelayedCount {
  readonly stream: string;
  /** Entries held. */
  readonly held: number;
  /** Of those, due now (Redis' clock) and not promoted yet: no worker promoted them (yet). */
  readonly due: number;
  /** When the soonest held entry is due (ISO-8601), `null` when none is held. */
  readonly nextDueAt: string | null;
}

export interface HeldEntry {
  readonly hold: string;
  readonly dueAt: string;
  /** Due now and not promoted yet. */
  readonly due: boolean;
  /** The entry's fields as `[name, value]` (values as UTF-8 text); `null` when its body is missing or unreadable. */
  readonly fields: [string, string][] | null;
  /** The promotion's XADD options (from the emit). */
  readonly noMkStream: boolean;
  readonly trim: string;
  /** A recurring entry's period in ms (it is scheduled again after each promotion), `null` for a one-off or a cron entry. */
  readonly everyMs: number | null;
  /** A cron entry's rule and the occurrences it has listed ahead (ISO-8601), `null` otherwise. */
  readonly cron: HeldCron | null;
}

export interface HeldCron {
  readonly expression: string;
  readonly timezone: string;
  readonly upcoming: string[];
}

export interface DelayedPage {
  readonly stream: string;
  readonly held: number;
  readonly entries: HeldEntry[];
  /** Offset of the next page, `null` after the last. */
  readonly nextOffset: number | null;
}

export async function countDelayed(client: RedisClient, stream: string): Promise<DelayedCount> {
  const now = await redisNow(client);
  const [{ held, due }, first] = await Promise.all([countHeldAndDue(client, stream, now), client.zrange(delayedKeys(stream).schedule, '0', '0', 'WITHSCORES')]);
  return { stream, held, due, nextDueAt: first.length === 2 ? new Date(Number(first[1])).toISOString() : null };
}

/**
 * Held and due counts only (ZCARD + ZCOUNT, O(log n), no range read): for a caller that polls
 * many streams (the dashboard) and reads Redis' clock once for all of them (`nowMs`, see
 * `redisNow` in redis/server-time.ts); `countDelayed` adds the next due time.
 */
export async function countHeldAndDue(client: RedisClient, stream: string, nowMs: number): Promise<{ held: number; due: number }> {
  const { schedule } = delayedKeys(stream);
  const [held, due] = await Promise.all([client.zcard(schedule), client.zcount(schedule, '-inf', nowMs)]);
  return { held, due };
}

export async function listDelayed(client: RedisClient, stream: string, options: { offset?: unknown; count?: unknown } = {}): Promise<DelayedPage> {
  const offset = integerOption('offset', options.offset, 0, 0);
  const count = integerOption('count', options.count, 100, 1, 10_000);
  const { schedule, bodies } = delayedKeys(stream);
  const [now, held, ...rows] = await delayedScripts(client).nrsDelayedList(schedule, bodies, offset, count);
  const entries = (rows as [string, number, BodyWords | null][]).map(([hold, dueMs, words]) => heldEntry(String(hold), Number(dueMs), words, Number(now)));
  const next = offset + entries.length;
  return { stream, held: Number(held), entries, nextOffset: entries.length === count && next < Number(held) ? next : null };
}

/**
 * Promotes now: the given holds (made due first, whatever their due time), else what is due.
 * Pages of {@link DEFAULT_PROMOTION_BATCH} until nothing due is left (at most 100 pages a run).
 */
export async function promoteDelayedNow(client: RedisClient, stream: string, holds: readonly string[] = []): Promise<{ stream: string; promoted: PromotionResult['promoted']; skipped: PromotionResult['skipped'] }> {
  const { schedule } = delayedKeys(stream);
  // XX: a hold promoted or removed meanwhile is not scheduled again.
  if (holds.length > 0) await client.zadd(schedule, 'XX', ...holds.flatMap((hold) => [0, hold]));
  const promoted: PromotionResult['promoted'] = [];
  const skipped: PromotionResult['skipped'] = [];
  for (let page = 0; page < 100; page++) {
    const result = await promoteDue(client, stream, DEFAULT_PROMOTION_BATCH);
    promoted.push(...result.promoted);
    skipped.push(...result.skipped);
    if (!result.full) break;
  }
  return { stream, promoted, skipped };
}

/** Removes holds (schedule, body and recurring-set member in one MULTI): they are never promoted. Resolves with how many were held. */
export async function removeDelayed(client: RedisClient, stream: string, holds: readonly string[]): Promise<{ stream: string; requested: number; removed: number }> {
  if (holds.length === 0) throw new RedisStreamsOptionError('holds', 'name at least one hold id');
  const { schedule, bodies, recurring } = delayedKeys(stream);
  const replies = await client.multi().zrem(schedule, ...holds).hdel(bodies, ...holds).srem(recurring, ...holds).exec();
  const [zremError, removed] = replies?.[0] ?? [new Error('MULTI was aborted'), 0];
  if (zremError) throw zremError;
  return { stream, requested: holds.length, removed: Number(removed) };
}

/** A body as the list scripts return it: 5 XADD words, the recurrence (a string, or a cron table as an array), the field/value pairs. */
type BodyWords = (string | (string | number)[])[];

function heldEntry(hold: string, dueMs: number, words: BodyWords | null, nowMs: number): HeldEntry {
  const fields: [string, string][] = [];
  for (let i = 6; words && i + 1 < words.length; i += 2) fields.push([String(words[i]), String(words[i + 1])]);
  const recurrence = words?.[5];
  return {
    hold,
    dueAt: new Date(dueMs).toISOString(),
    due: dueMs <= nowMs,
    fields: words ? fields : null,
    noMkStream: words?.[0] === '1',
    trim: words ? describeTrim(words) : 'unknown',
    everyMs: typeof recurrence === 'string' && Number(recurrence) > 0 ? Number(recurrence) : null,
    cron: Array.isArray(recurrence)
      ? { expression: String(recurrence[0]), timezone: String(recurrence[1]), upcoming: recurrence.slice(2).map((at) => new Date(Number(at)).toISOString()) }
      : null,
  };
}

export interface RecurringEntry extends HeldEntry {
  readonly stream: string;
}

/**
 * The recurring entries of `stream` (every `repeat` emit still scheduled, from its recurring set:
 * not a scan of all holds), soonest due first. Ids of holds removed meanwhile leave the set.
 */
export async function listRecurring(client: RedisClient, stream: string): Promise<RecurringEntry[]> {
  const { schedule, bodies, recurring } = delayedKeys(stream);
  const [now, ...rows] = await delayedScripts(client).nrsDelayedListRecurring(schedule, bodies, recurring);
  return (rows as [string, number, BodyWords | null][])
    .map(([hold, dueMs, words]) => ({ hold: String(hold), dueMs: Number(dueMs), words }))
    .sort(inDueOrder)
    .map(({ hold, dueMs, words }) => ({ stream, ...heldEntry(hold, dueMs, words, Number(now)) }));
}

function describeTrim(words: BodyWords): string {
  const [, kind, operator, amount, onlyAcked] = words.map(String);
  if (kind === 'maxLen') return `MAXLEN ${operator} ${amount}${onlyAcked === '1' ? ' ACKED' : ''}`;
  if (kind === 'maxAge') return `maxAge ${amount} ms (MINID ${operator})${onlyAcked === '1' ? ' ACKED' : ''}`;
  return 'none';
}
