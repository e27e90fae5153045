import type { RedisClient } from '../redis/connection.js';
import { delayedKeys } from './delayed-keys.js';
import { inDueOrder } from './due-order.js';
import { delayedScripts, type BufferWords } from './scripts/loader.js';

/**
 * Held delayed entries and recurring schedules of a stream a page at a time, after a cursor (the
 * due time and hold id of the last one shown), with their fields byte for byte: for a console
 * that polls (the dashboard) and pages while workers promote. The CLI's `delayed list` pages by
 * offset (delayed-inspection.ts).
 */

/** Where a page starts: after the entry due at `dueMs` with hold id `hold` (in due, then byte order). */
export interface DelayedCursor {
  readonly dueMs: number;
  readonly hold: string;
}

export interface HeldEntryBytes {
  readonly hold: string;
  readonly dueMs: number;
  /** Due now (Redis' clock) and not promoted yet. */
  readonly due: boolean;
  /** The entry's flat `[name, value, …]`; null when its body is missing or unreadable. */
  readonly fields: Buffer[] | null;
  /** A recurring entry's period in ms, null otherwise. */
  readonly everyMs: number | null;
  /** A cron entry's rule and the occurrences it has listed ahead (Unix ms), null otherwise. */
  readonly cron: { readonly expression: string; readonly timezone: string; readonly upcomingMs: number[] } | null;
}

export interface HeldPage {
  /** Entries held in all (recurring ones included). */
  readonly held: number;
  readonly entries: HeldEntryBytes[];
}

/** Up to `count` held entries of `stream`, soonest due first, after `after` (the first page without it). */
export async function heldPage(client: RedisClient, stream: string, count: number, after?: DelayedCursor): Promise<HeldPage> {
  const { schedule, bodies } = delayedKeys(stream);
  const [now, held, ...rows] = await delayedScripts(client).nrsDelayedListPageBuffer(schedule, bodies, after === undefined ? '' : String(after.dueMs), after?.hold ?? '', count);
  return { held: Number(held), entries: (rows as Row[]).map((row) => heldEntryOf(row, Number(now))) };
}

/**
 * Up to `count` recurring schedules of `stream` (its recurring set, read whole: a schedule is
 * registered by code, they are few), soonest due first, after `after`; and how many there are.
 */
export async function recurringPage(client: RedisClient, stream: string, count: number, after?: DelayedCursor): Promise<{ total: number; entries: HeldEntryBytes[] }> {
  const { schedule, bodies, recurring } = delayedKeys(stream);
  const [now, ...rows] = await delayedScripts(client).nrsDelayedListRecurringBuffer(schedule, bodies, recurring);
  const all = (rows as Row[]).map((row) => heldEntryOf(row, Number(now))).sort(inDueOrder);
  const start = after === undefined ? 0 : all.findIndex((entry) => inDueOrder(entry, after) > 0);
  return { total: all.length, entries: start < 0 ? [] : all.slice(start, start + count) };
}

type Row = [Buffer, number, BufferWords | null];

function heldEntryOf([hold, dueMs, words]: Row, nowMs: number): HeldEntryBytes {
  const recurrence = words?.[5];
  return {
    hold: String(hold),
    dueMs: Number(dueMs),
    due: Number(dueMs) <= nowMs,
    fields: words ? (words.slice(6) as Buffer[]) : null,
    everyMs: Buffer.isBuffer(recurrence) && Number(String(recurrence)) > 0 ? Number(String(recurrence)) : null,
    cron: Array.isArray(recurrence) ? { expression: String(recurrence[0]), timezone: String(recurrence[1]), upcomingMs: recurrence.slice(2).map(Number) } : null,
  };
}
