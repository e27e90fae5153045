import { RedisStreamsOptionError } from '../errors.js';
import { compareStreamIds } from '../stream-ids.js';
import { describe, isStreamId } from '../validation.js';

/** Largest sequence part of a stream id: `<ms>-MAX_SEQ` is the last id of that millisecond. */
const MAX_SEQ = '18446744073709551615';
/** Largest ms part of a stream id. */
const MAX_MS = MAX_SEQ;
/** Largest ms part of a stream id. */const MS = /^\d{1,20}$/;
/** An ISO-8601 date or date-time (what `<input type="datetime-local">` and `Date#toISOString` write). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/** Which end of the stream a list of its entries starts at. */
export type EntryOrder = 'newest' | 'oldest';

/** An id range of a stream, both ends inclusive and written out (`ms-seq`). */
export interface IdRange {
  readonly from: string;
  readonly to: string;
  /** Whether the request narrowed it (the whole stream otherwise: its count is its length). */
  readonly narrowed: boolean;
}

export function orderParameter(value: unknown): EntryOrder {
  if (value === undefined || value === '' || value === 'newest') return 'newest';
  if (value === 'oldest') return 'oldest';
  throw new RedisStreamsOptionError('order', `must be "newest" or "oldest", got ${describe(value)}`);
}

/**
 * `from` / `to` of a request as an id range. Each end is a stream id (`1700000000000-0`), a
 * millisecond time (`1700000000000`, all the ids of that ms) or an ISO-8601 time
 * (`2026-12-05T09:30:00Z`; UTC when it names no zone): ids are the ms they were added at, so a
 * time range is an id range.
 */
export function idRangeParameters(from: unknown, to: unknown): IdRange {
  const start = idEnd('from', from, '0');
  const end = idEnd('to', to, MAX_SEQ);
  if (start !== null && end !== null && compareStreamIds(start, end) > 0) {
    throw new RedisStreamsOptionError('to', `must not be before from (${start}), got ${end}`);
  }
  return { from: start ?? '0-0', to: end ?? `${MAX_MS}-${MAX_SEQ}`, narrowed: start !== null || end !== null };
}

function idEnd(option: string, value: unknown, seq: string): string | null {
  if (value === undefined || value === '') return null;
  if (typeof value === 'string') {
    if (isStreamId(value)) return value;
    if (MS.test(value) && BigInt(value) <= BigInt(MAX_MS)) return `${BigInt(value)}-${seq}`;
    // A time without a zone is UTC (Date.parse would take the server's zone, which the operator does not see).
    const ms = ISO_TIME.test(value) && dayExists(value) ? Date.parse(/T[^Z+-]*$/.test(value) ? `${value}Z` : value) : Number.NaN;
    if (Number.isFinite(ms) && ms >= 0) return `${ms}-${seq}`;
  }
  throw new RedisStreamsOptionError(option, `must be a stream id ("1700000000000-0"), a time in ms ("1700000000000") or an ISO-8601 time ("2026-12-05T09:30:00Z"), got ${describe(value)}`);
}

/**
 * Whether the date of an ISO_TIME text is a day of its month: Date.parse rolls a day the month
 * lacks over into the next one (`2026-02-29` is 1 March, `2026-04-31` is 1 May), which would
 * show another range than the one asked for.
 */
function dayExists(text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  // Day 0 of the next month is the last day of this one (a year below 100 maps to 19xx: the same leap years).
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** A list's `cursor`: `(<id>` (after that id in the list's order, as a `next` said), or absent for the first page. */
export function entryCursorParameter(value: unknown): string | null {
  if (value === undefined || value === '') return null;
  if (typeof value === 'string' && value.startsWith('(') && isStreamId(value.slice(1))) return value.slice(1);
  throw new RedisStreamsOptionError('cursor', `must be the "next" of a page, such as "(1700000000000-0", got ${describe(value)}`);
}

/**
 * The XRANGE / XREVRANGE bounds of the page after `cursor` (exclusive) within `range`: the cursor
 * moves the start (oldest first) or the end (newest first), never out of the range.
 */
export function pageBounds(range: IdRange, order: EntryOrder, cursor: string | null): { start: string; end: string } {
  if (cursor === null) return { start: range.from, end: range.to };
  if (order === 'oldest') return { start: compareStreamIds(cursor, range.from) < 0 ? range.from : `(${cursor}`, end: range.to };
  return { start: range.from, end: compareStreamIds(cursor, range.to) > 0 ? range.to : `(${cursor}` };
}

/** Longest entry or hold id a request may carry (as the lifecycle's `entryIdOption`). */
const MAX_ENTRY_ID_LENGTH = 1024;

/** An entry's `id` from a request: a stream id, or the hold id a delayed emit returned. */
export function entryIdParameter(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ENTRY_ID_LENGTH) {
    throw new RedisStreamsOptionError('id', `must be a stream id ("1700000000000-0") or the hold id a delayed emit returned, got ${describe(value)}`);
  }
  return value;
}
