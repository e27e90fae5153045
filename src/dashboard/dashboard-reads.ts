import { Injectable } from '@nestjs/common';
import type { StreamFieldPairs } from '../claim/claimed-fields.js';
import type { PendingEntry } from '../claim/inspection.types.js';
import { heldPage, recurringPage, type DelayedCursor, type HeldEntryBytes } from '../delayed/delayed-pages.js';
import { redisNow } from '../redis/server-time.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { DeadLetter } from '../recovery/dead-letter-format.js';
import { describe, integerOption, isStreamId, nonEmptyStringOption } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import type { OverviewView } from './dashboard-views.js';
import { sampleTargets } from './stream-sampler.js';
import { boundedView } from './overview-bounds.js';
import { fieldViews, PREVIEW_BYTES, type FieldView } from './field-views.js';

/** Names typed into the page that one refresh takes at most (the page keeps them, the server does not). */
export const MAX_NAMED_STREAMS = 10;
/** Longest stream / group / consumer name a request may carry. */
export const MAX_NAME_LENGTH = 1024;
/** Rows of a dead-letter or pending list the page shows. */
export const LIST_COUNT = 50;

/** A dead letter with its original fields as the page shows them (text, or marked base64; cut in a list). */
export type DeadLetterView = Omit<DeadLetter<StreamFieldPairs>, 'fields'> & { fields: FieldView[] };

export interface DeadLettersView {
  deadLetterKey: string;
  /** Dead letters of the stream in all (its dead-letter streams' lengths). */
  total: number;
  /** Each name and value of their fields cut to PREVIEW_BYTES: `api/dead-letter` has one whole. */
  deadLetters: DeadLetterView[];
  /** The cursor of the next page (`cursor=` of the next request), null after the last. */
  next: string | null;
  /** More dead letters after these. */
  more: boolean;
}

export interface PendingView {
  /** Entries pending in the group in all. */
  total: number;
  entries: PendingEntry[];
  /** The cursor of the next page (`cursor=` of the next request), null after the last. */
  next: string | null;
  /** More pending entries after these. */
  more: boolean;
}

/** A held delayed entry or a recurring schedule as the page shows it. */
export interface DelayedEntryView {
  hold: string;
  /** When it is due (Redis' clock, ISO-8601). */
  dueAt: string;
  /** Due now and not promoted yet. */
  due: boolean;
  /** Each name and value cut to PREVIEW_BYTES; null when its body is missing or unreadable. */
  fields: FieldView[] | null;
  /** A recurring entry's period in ms, null otherwise. */
  everyMs: number | null;
  /** A cron entry's rule and its next runs (ISO-8601, at most CRON_RUNS_SHOWN), null otherwise. */
  cron: { expression: string; timezone: string; nextRuns: string[] } | null;
}

export interface DelayedListView {
  /** Held entries (for `api/delayed`) or recurring schedules (for `api/schedules`) in all. */
  total: number;
  entries: DelayedEntryView[];
  /** The cursor of the next page (`cursor=` of the next request), null after the last. */
  next: string | null;
  /** More after these. */
  more: boolean;
}

/** Next runs of a cron schedule a list shows. */
export const CRON_RUNS_SHOWN = 5;

/** The dashboard's read-only API: overview, dead letters, one dead letter, pending entries, one entry's fields. */
@Injectable()
export class DashboardReads {
  constructor(private readonly context: DashboardContext) {}

  /**
   * A page of the overview: at most `maxStreams` of the streams shown (whose name contains
   * `match`, ignoring case), from `offset`, sampled in one batch (see stream-sampler.ts for the
   * cost) and cut to the bounds of overview-bounds.ts.
   */
  async overview(named: readonly string[], offset?: unknown, match?: unknown): Promise<OverviewView> {
    if (named.length > MAX_NAMED_STREAMS) throw new RedisStreamsOptionError('stream', `at most ${MAX_NAMED_STREAMS} streams by name, got ${named.length}`);
    named.forEach((name, index) => nameParameter(`stream[${index}]`, name));
    const start = offset === undefined || offset === '' ? 0 : integerOption('offset', typeof offset === 'string' && /^\d{1,9}$/.test(offset) ? Number(offset) : offset, 0, 0);
    const filter = match === undefined || match === '' ? null : nameParameter('match', match).toLowerCase();
    const keys = this.context.targets(named);
    const shown = filter === null ? keys.targets : keys.targets.filter((target) => target.name.toLowerCase().includes(filter));
    const targets = shown.slice(start, start + this.context.options.maxStreams);
    const at = Date.now();
    // One TIME a refresh: every stream's due count is on the same clock reading.
    const redisNowMs = targets.length === 0 ? null : await redisNow(this.context.redis).catch(() => null);
    const parts = { inspector: this.context.inspector, redis: this.context.redis, deadLetterKeyOf: this.context.deadLetterKeyOf(keys), redisNowMs };
    const streams = (await sampleTargets(parts, targets)).map(boundedView);
    const end = start + targets.length;
    return { at, streams, total: shown.length, offset: start, next: end < shown.length ? end : null, omitted: shown.length - targets.length };
  }

  /**
   * The oldest dead letters of `stream` (a partitioned stream's merged), each field's name and
   * value cut to PREVIEW_BYTES: the page polls this, fields of megabytes must not ride along.
   */
  async deadLetterList(stream: unknown, cursor?: unknown): Promise<DeadLettersView> {
    const name = nameParameter('stream', stream);
    const start = cursorParameter(cursor);
    const keyOption = this.context.deadLetterKeyOption(name);
    // One more than a page: whether another page follows is known, not guessed. base64: the exact
    // bytes, for fieldViews to tell UTF-8 from other bytes.
    const [page, total] = await Promise.all([
      this.context.deadLetters.list(name, { start, count: LIST_COUNT + 1, fieldsFormat: 'pairs', encoding: 'base64', ...keyOption }),
      this.context.deadLetters.size(name, keyOption),
    ]);
    const shown = page.deadLetters.slice(0, LIST_COUNT);
    // Fewer than a page of this stream's, yet rows left: a shared dead-letter key holds others' too.
    const next = page.deadLetters.length > LIST_COUNT ? `(${shown.at(-1)!.deadLetterId}` : page.nextStart;
    return { deadLetterKey: page.deadLetterKey, total, deadLetters: shown.map((letter) => deadLetterView(letter, PREVIEW_BYTES)), next, more: next !== null };
  }

  /** One dead letter of `stream` (a partition's key for a partitioned stream's) with its whole fields, or null when it is gone. */
  async deadLetter(stream: unknown, id: unknown): Promise<DeadLetterView | null> {
    const name = nameParameter('stream', stream);
    if (!isStreamId(id)) throw new RedisStreamsOptionError('id', `must be a stream id, got ${describe(id)}`);
    const letter = await this.context.deadLetters.inspect(name, id, { fieldsFormat: 'pairs', encoding: 'base64', ...this.context.deadLetterKeyOption(name) });
    return letter === null ? null : deadLetterView(letter);
  }

  /** A page of the group's pending entries, oldest first from `cursor`: owner, idle time, deliveries; and how many there are. */
  async pending(stream: unknown, group: unknown, cursor?: unknown): Promise<PendingView> {
    const key = nameParameter('stream', stream);
    const groupName = nameParameter('group', group);
    const start = cursorParameter(cursor);
    // The range first: a missing stream or group is its error (404), not the summary's.
    const entries = await this.context.inspector.pendingRange(key, groupName, { start, count: LIST_COUNT + 1, retryConsumer: false });
    const summary = (await this.context.redis.xpending(key, groupName)) as [number | string, ...unknown[]];
    const shown = entries.slice(0, LIST_COUNT);
    const next = entries.length > LIST_COUNT ? `(${shown.at(-1)!.id}` : null;
    return { total: Number(summary[0]), entries: shown, next, more: next !== null };
  }

  /** A page of the delayed entries held for `stream`, soonest due first from `cursor`, and how many are held. */
  async delayed(stream: unknown, cursor?: unknown): Promise<DelayedListView> {
    const key = nameParameter('stream', stream);
    // One more than a page: whether another page follows is known, not guessed.
    const page = await heldPage(this.context.redis, key, LIST_COUNT + 1, delayedCursorParameter(cursor));
    return delayedListView(page.held, page.entries);
  }

  /** A page of the recurring schedules (`every`, `cron`) of `stream`, soonest due first from `cursor`, and how many there are. */
  async schedules(stream: unknown, cursor?: unknown): Promise<DelayedListView> {
    const key = nameParameter('stream', stream);
    const page = await recurringPage(this.context.redis, key, LIST_COUNT + 1, delayedCursorParameter(cursor));
    return delayedListView(page.total, page.entries);
  }

  /** One entry of a stream (XRANGE id id) with its whole fields, or null when it is gone. */
  async entry(stream: unknown, id: unknown): Promise<{ id: string; fields: FieldView[] } | null> {
    const key = nameParameter('stream', stream);
    if (!isStreamId(id)) throw new RedisStreamsOptionError('id', `must be a stream id, got ${describe(id)}`);
    // The Buffer variant: the exact bytes, for fieldViews to tell UTF-8 from other bytes.
    const [row] = (await this.context.redis.callBuffer('XRANGE', key, id, id)) as [Buffer, Buffer[]][];
    return row === undefined ? null : { id: String(row[0]), fields: fieldViews(row[1]) };
  }
}

/** A dead letter read with `encoding: 'base64'`, its fields back to bytes and shown (cut to `limit` bytes each). */
export function deadLetterView(letter: DeadLetter<StreamFieldPairs>, limit?: number): DeadLetterView {
  return { ...letter, fields: fieldViews(letter.fields.flat().map((base64) => Buffer.from(base64, 'base64')), limit) };
}

/** A page of held entries (one more than LIST_COUNT read), each field cut to PREVIEW_BYTES. */
function delayedListView(total: number, read: readonly HeldEntryBytes[]): DelayedListView {
  const shown = read.slice(0, LIST_COUNT);
  const last = shown.at(-1);
  const next = read.length > LIST_COUNT && last !== undefined ? `${last.dueMs}:${last.hold}` : null;
  return { total, entries: shown.map(delayedEntryView), next, more: next !== null };
}

function delayedEntryView(entry: HeldEntryBytes): DelayedEntryView {
  return {
    hold: entry.hold,
    dueAt: new Date(entry.dueMs).toISOString(),
    due: entry.due,
    fields: entry.fields === null ? null : fieldViews(entry.fields, PREVIEW_BYTES),
    everyMs: entry.everyMs,
    cron: entry.cron === null ? null : { expression: entry.cron.expression, timezone: entry.cron.timezone, nextRuns: [entry.dueMs, ...entry.cron.upcomingMs.filter((ms) => ms > entry.dueMs)].slice(0, CRON_RUNS_SHOWN).map((ms) => new Date(ms).toISOString()) },
  };
}

/** A delayed list's `cursor` from a request: `<due ms>:<hold id>` (as a `next` said), or absent for the first page. */
export function delayedCursorParameter(value: unknown): DelayedCursor | undefined {
  if (value === undefined || value === '') return undefined;
  const match = typeof value === 'string' ? /^(\d{1,16}):(.+)$/s.exec(value) : null;
  if (match === null || match[2]!.length > MAX_NAME_LENGTH) {
    throw new RedisStreamsOptionError('cursor', `must be the "next" of a page, such as "1700000000000:hold-id", got ${describe(value)}`);
  }
  return { dueMs: Number(match[1]), hold: match[2]! };
}

/** A list's `cursor` from a request: `(<id>` (after that id, as a `next` said), or absent for the first page. */
export function cursorParameter(value: unknown): string {
  if (value === undefined || value === '') return '-';
  if (typeof value === 'string' && value.startsWith('(') && isStreamId(value.slice(1))) return value;
  throw new RedisStreamsOptionError('cursor', `must be the "next" of a page, such as "(1700000000000-0", got ${describe(value)}`);
}

/** A stream, group or consumer name from a request: a non-empty string of bounded length. */
export function nameParameter(option: string, value: unknown): string {
  const name = nonEmptyStringOption(option, value);
  if (name.length > MAX_NAME_LENGTH) throw new RedisStreamsOptionError(option, `must be at most ${MAX_NAME_LENGTH} characters, got ${name.length}`);
  return name;
}
