import { Injectable } from '@nestjs/common';
import { parseHeaders } from '../codec/stream-deserializer.js';
import { heldPage } from '../delayed/delayed-pages.js';
import { WireField, type Headers } from '../codec/wire-format.js';
import { errorMessage } from '../error-message.js';
import { entryStatus, type EntryState, type GroupEntryStatus } from '../lifecycle/entry-status.js';
import { entryStreamsOf } from '../lifecycle/entry-streams.js';
import type { EntryProgressRecord, EntryResultRecord } from '../lifecycle/lifecycle-records.js';
import { isStreamId } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import { LIST_COUNT, nameParameter } from './dashboard-reads.js';
import { entryCursorParameter, entryIdParameter, idRangeParameters, orderParameter, pageBounds, type EntryOrder } from './entry-range.js';
import { fieldText, fieldViews, PREVIEW_BYTES, type FieldText, type FieldView } from './field-views.js';

/**
 * Bytes of each field name and value, and of a progress or result value, the entry view sends:
 * enough for a payload to show as formatted JSON, bounded all the same (the view refreshes);
 * `api/entry` has the fields whole.
 */
export const ENTRY_VIEW_BYTES = 64 * 1024;

/** One entry of a stream's list: its id and fields, each name and value cut to PREVIEW_BYTES. */
export interface EntryRowView {
  id: string;
  fields: FieldView[];
}

export interface EntriesView {
  stream: string;
  order: EntryOrder;
  /** The range asked for (ids written out, both ends inclusive), null for the whole stream. */
  range: { from: string; to: string } | null;
  /** Entries in the stream (XLEN). */
  total: number;
  /**
   * Entries in the range: the total for the whole stream, the count read when the first page
   * held the whole range; else null (Redis has no count of an id range short of reading it).
   */
  rangeCount: number | null;
  entries: EntryRowView[];
  /** The cursor of the next page (`cursor=` of the next request), null after the last. */
  next: string | null;
  more: boolean;
}

/** The wire format's parts of an entry (src/codec/wire-format.ts): its pattern, headers and the trace id they carry. */
export interface WireView {
  pattern: string | null;
  /** The `headers` field's JSON object, null when there is none. */
  headers: Headers | null;
  /** Why the `headers` field could not be read (not JSON, cut, not UTF-8), else null. */
  headersError: string | null;
  /** The W3C trace id of its `traceparent` header (the producer's trace), else null. */
  traceId: string | null;
}

/** A progress or kept-result value as the page shows it: its JSON text, cut to ENTRY_VIEW_BYTES. */
export interface LifecycleValueView {
  delivery: number;
  at: string;
  value: FieldText | null;
  /** A failed result's error. */
  error: { name: string; message: string } | null;
  state: 'progress' | 'done' | 'failed';
}

export interface EntryView {
  /** The stream asked for (a partitioned stream's name, or a key). */
  stream: string;
  /** The stream key it is (or was) in: a partition's key for a partitioned stream; null when held. */
  key: string | null;
  id: string;
  /** What the lifecycle says of it (docs/lifecycle.md): one state, and per group. */
  state: EntryState;
  groups: readonly GroupEntryStatus[];
  /** Held (a delayed emit's hold id): when it is due. */
  dueAt: string | null;
  /** False when the dead-letter search stopped at its bound: a `done` may be a dead letter further on. */
  deadLettersSearched: boolean;
  progress: LifecycleValueView | null;
  result: LifecycleValueView | null;
  /** Where the fields below were read: the stream, its dead letter, its delayed hold, or nowhere (a hold's body not found). */
  fieldsFrom: 'stream' | 'dead-letter' | 'delayed' | null;
  /** Each name and value cut to ENTRY_VIEW_BYTES; null when not found. */
  fields: FieldView[] | null;
  wire: WireView;
}

/** W3C trace context: version, trace id, parent id, flags. */
const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/** The reads of the entries list and the entry view (`api/entries`, `api/entry-view`). */
@Injectable()
export class EntryReads {
  constructor(private readonly context: DashboardContext) {}

  /**
   * A page of `stream`'s entries, newest or oldest first, within an id or time range, after
   * `cursor`; XRANGE / XREVRANGE COUNT LIST_COUNT + 1 and an XLEN. Per stream key: a partitioned
   * stream's entries are listed per partition.
   */
  async entries(query: { stream?: unknown; order?: unknown; from?: unknown; to?: unknown; cursor?: unknown }): Promise<EntriesView> {
    const key = nameParameter('stream', query.stream);
    const order = orderParameter(query.order);
    const range = idRangeParameters(query.from, query.to);
    const cursor = entryCursorParameter(query.cursor);
    const { start, end } = pageBounds(range, order, cursor);
    const read = order === 'oldest' ? ['XRANGE', key, start, end] : ['XREVRANGE', key, end, start];
    // One more than a page: whether another page follows is known, not guessed. The Buffer
    // variant: the exact bytes, for fieldViews to tell UTF-8 from other bytes.
    const [rows, total] = await Promise.all([
      this.context.redis.callBuffer(read[0]!, ...read.slice(1), 'COUNT', LIST_COUNT + 1) as Promise<[Buffer, Buffer[]][]>,
      this.context.redis.xlen(key),
    ]);
    const shown = rows.slice(0, LIST_COUNT).map(([id, flat]) => ({ id: String(id), fields: fieldViews(flat, PREVIEW_BYTES) }));
    const next = rows.length > LIST_COUNT ? `(${shown.at(-1)!.id}` : null;
    const rangeCount = !range.narrowed ? total : cursor === null && next === null ? shown.length : null;
    return { stream: key, order, range: range.narrowed ? { from: range.from, to: range.to } : null, total, rangeCount, entries: shown, next, more: next !== null };
  }

  /**
   * Entry `id` of `stream` (a stream id, or a delayed emit's hold id) for the entry view: what the
   * lifecycle says of it (`entryStatus`, as `client.entryStatus` and the CLI's `entry` ask), and
   * its fields from the stream, else from its dead letter. Null when nothing has it any more.
   */
  async entry(stream: unknown, id: unknown): Promise<EntryView | null> {
    const name = nameParameter('stream', stream);
    const entryId = entryIdParameter(id);
    const redis = this.context.redis;
    const deadLetterKeyOf = this.context.deadLetterKeyOf(this.context.targets());
    const status = await entryStatus(redis, await entryStreamsOf(redis, name, undefined), entryId, { deadLetterKey: deadLetterKeyOf });
    const read = status.state === 'held' ? await this.heldFieldsOf(status.key, entryId, status.dueAt) : await this.fieldsOf(status.key, entryId, status.groups);
    if (read === null && status.state !== 'held') return null;
    return {
      stream: name,
      key: status.key,
      id: entryId,
      state: status.state,
      groups: status.groups,
      dueAt: status.dueAt,
      deadLettersSearched: status.deadLettersSearched,
      progress: status.progress === null ? null : progressView(status.progress),
      result: status.result === null ? null : resultView(status.result),
      fieldsFrom: read?.from ?? null,
      fields: read?.fields ?? null,
      wire: wireView(read?.flat ?? []),
    };
  }

  /**
   * A held entry's fields: read with the page of holds due at its ms (the delayed list's read, at
   * most LIST_COUNT + 1 of them); null when more holds share its ms than that, or it was promoted meanwhile.
   */
  private async heldFieldsOf(key: string | null, hold: string, dueAt: string | null): Promise<{ from: 'delayed'; flat: Buffer[]; fields: FieldView[] } | null> {
    if (key === null || dueAt === null) return null;
    // After '' at its due ms: the holds due then, in byte order (no hold id is empty).
    const page = await heldPage(this.context.redis, key, LIST_COUNT + 1, { dueMs: Date.parse(dueAt), hold: '' });
    const flat = page.entries.find((entry) => entry.hold === hold)?.fields;
    return flat === undefined || flat === null ? null : { from: 'delayed', flat, fields: fieldViews(flat, ENTRY_VIEW_BYTES) };
  }

  /** The entry's fields: from the stream while it has them, else from a dead letter of it. */
  private async fieldsOf(key: string | null, id: string, groups: readonly GroupEntryStatus[]): Promise<{ from: 'stream' | 'dead-letter'; flat: Buffer[]; fields: FieldView[] } | null> {
    if (key === null || !isStreamId(id)) return null;
    const [row] = (await this.context.redis.callBuffer('XRANGE', key, id, id)) as [Buffer, Buffer[]][];
    if (row !== undefined) return { from: 'stream', flat: row[1], fields: fieldViews(row[1], ENTRY_VIEW_BYTES) };
    const deadLetter = groups.find((group) => group.deadLetter !== null)?.deadLetter;
    if (deadLetter === undefined || deadLetter === null) return null;
    const letter = await this.context.deadLetters.inspect(key, deadLetter.id, { fieldsFormat: 'pairs', encoding: 'base64', deadLetterKey: deadLetter.key });
    if (letter === null) return null;
    const flat = letter.fields.flat().map((base64) => Buffer.from(base64, 'base64'));
    return { from: 'dead-letter', flat, fields: fieldViews(flat, ENTRY_VIEW_BYTES) };
  }
}

/** The wire format's pattern and headers of an entry's flat fields, and the trace id of its `traceparent`. */
export function wireView(flat: readonly Buffer[]): WireView {
  let pattern: string | null = null;
  let rawHeaders: Buffer | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = String(flat[i]);
    if (name === WireField.pattern) pattern = fieldText(flat[i + 1]!, PREVIEW_BYTES).text;
    if (name === WireField.headers) rawHeaders = flat[i + 1];
  }
  if (rawHeaders === undefined) return { pattern, headers: null, headersError: null, traceId: null };
  if (rawHeaders.length > ENTRY_VIEW_BYTES) return { pattern, headers: null, headersError: `"${WireField.headers}" is ${rawHeaders.length} bytes: see the field`, traceId: null };
  try {
    const headers = parseHeaders(rawHeaders.toString('utf8'));
    const traceId = TRACEPARENT.exec(headers.traceparent ?? '')?.[1] ?? null;
    return { pattern, headers, headersError: null, traceId: traceId === '0'.repeat(32) ? null : traceId };
  } catch (error) {
    return { pattern, headers: null, headersError: errorMessage(error), traceId: null };
  }
}

function progressView(record: EntryProgressRecord): LifecycleValueView {
  return { state: 'progress', delivery: record.delivery, at: record.at, value: jsonText(record.value), error: null };
}

function resultView(record: EntryResultRecord): LifecycleValueView {
  if (record.state === 'failed') return { state: 'failed', delivery: record.delivery, at: record.at, value: null, error: record.error };
  return { state: 'done', delivery: record.delivery, at: record.at, value: jsonText(record.value), error: null };
}

/** A kept value as its JSON text, cut to ENTRY_VIEW_BYTES (a result may be large). */
function jsonText(value: unknown): FieldText | null {
  const text = JSON.stringify(value);
  return text === undefined ? null : fieldText(Buffer.from(text), ENTRY_VIEW_BYTES);
}
