import type { StreamFieldPairs } from '../claim/claimed-fields.js';
import { heldPage, type HeldEntryBytes } from '../delayed/delayed-pages.js';
import type { DeadLetter } from '../recovery/dead-letter-format.js';
import type { DashboardContext } from './dashboard-context.js';

/**
 * Bounded scans of a stream's entries or dead letters for the find and the filter-wide bulk
 * actions: XRANGE from a cursor in reads of at most MAX_READ entries, never unbounded and never
 * a key scan. A read's COUNT follows the bytes the previous one brought (about READ_BYTES a
 * read), starting small, so large entries are read a few at a time.
 */

/** Most entries one XRANGE reads. */
export const MAX_READ = 500;
/** Entries the first XRANGE of a request reads (sizes unknown yet). */
export const FIRST_READ = 50;
/** About how many bytes one read should bring. */
export const READ_BYTES = 4 * 1024 * 1024;

/** One entry (or dead letter) read: its id, its flat fields' bytes, and the dead letter itself for a dead-letter scan. */
export interface ScannedRow {
  readonly id: string;
  readonly flat: readonly Buffer[];
  readonly letter?: DeadLetter<StreamFieldPairs>;
  /** A held delayed entry (its hold id is `id`). */
  readonly held?: HeldEntryBytes;
  /** A pending entry whose body is gone from the stream (trimmed or deleted): its fields are unknown. */
  readonly gone?: boolean;
  /** The cursor after this row when it is not `(<id>` (a delayed list's `<due ms>:<hold>`). */
  readonly cursor?: string;
}

/** One read: its rows, and the cursor after it (`(<id>`), null when the stream ends there. */
export interface ScannedBatch {
  readonly rows: ScannedRow[];
  readonly after: string | null;
}

/** Reads of `key`'s entries from `start` (`-` or `(<id>`) on, until the end. */
export async function* entryBatches(context: DashboardContext, key: string, start: string): AsyncGenerator<ScannedBatch> {
  let count = FIRST_READ;
  let from = start;
  for (;;) {
    const read = (await context.redis.callBuffer('XRANGE', key, from, '+', 'COUNT', count)) as [Buffer, Buffer[]][];
    const rows = read.map(([id, flat]) => ({ id: String(id), flat }));
    const after = read.length < count ? null : `(${rows.at(-1)!.id}`;
    yield { rows, after };
    if (after === null) return;
    from = after;
    count = nextCount(rows);
  }
}

/** Reads of the dead letters of `stream` (a partitioned stream's merged) from `start` on, until the end. */
export async function* deadLetterBatches(context: DashboardContext, stream: string, start: string): AsyncGenerator<ScannedBatch> {
  const keyOption = context.deadLetterKeyOption(stream);
  let count = FIRST_READ;
  let from = start;
  for (;;) {
    const page = await context.deadLetters.list(stream, { start: from, count, fieldsFormat: 'pairs', encoding: 'base64', ...keyOption });
    const rows = page.deadLetters.map((letter) => ({ id: letter.deadLetterId, flat: letter.fields.flat().map((base64) => Buffer.from(base64, 'base64')), letter }));
    yield { rows, after: page.nextStart };
    if (page.nextStart === null) return;
    from = page.nextStart;
    count = nextCount(rows);
  }
}

/**
 * Reads of a group's pending entries (XPENDING) from `start` on, until the end; with `bodies`,
 * each entry's fields too (one XRANGE of its id each, pipelined), else none.
 */
export async function* pendingBatches(context: DashboardContext, stream: string, group: string, start: string, bodies: boolean): AsyncGenerator<ScannedBatch> {
  let from = start;
  for (;;) {
    const pending = await context.inspector.pendingRange(stream, group, { start: from, count: MAX_READ, retryConsumer: false });
    const ids = pending.map((entry) => entry.id);
    const read = bodies ? await Promise.all(ids.map((id) => context.redis.callBuffer('XRANGE', stream, id, id) as Promise<[Buffer, Buffer[]][]>)) : [];
    const rows = ids.map((id, i) => (bodies && read[i]!.length === 0 ? { id, flat: [], gone: true } : { id, flat: bodies ? read[i]![0]![1] : [] }));
    const after = pending.length < MAX_READ ? null : `(${ids.at(-1)!}`;
    yield { rows, after };
    if (after === null) return;
    from = after;
  }
}

/** Reads of the delayed entries held for `stream`, soonest due first, after `start` (`<due ms>:<hold>`, or none), until the end. */
export async function* heldBatches(context: DashboardContext, stream: string, start: { dueMs: number; hold: string } | undefined): AsyncGenerator<ScannedBatch> {
  let after = start;
  for (;;) {
    const page = await heldPage(context.redis, stream, MAX_READ, after);
    const rows = page.entries.map((held) => ({ id: held.hold, flat: held.fields ?? [], held, cursor: `${held.dueMs}:${held.hold}` }));
    const last = page.entries.at(-1);
    const next = page.entries.length < MAX_READ || last === undefined ? null : { dueMs: last.dueMs, hold: last.hold };
    yield { rows, after: next === null ? null : `${next.dueMs}:${next.hold}` };
    if (next === null) return;
    after = next;
  }
}

/** The next read's COUNT: about READ_BYTES at the average size of the last read's rows. */
function nextCount(rows: readonly ScannedRow[]): number {
  if (rows.length === 0) return MAX_READ;
  const bytes = rows.reduce((sum, row) => sum + row.flat.reduce((one, part) => one + part.length, 0) + row.id.length, 0);
  return Math.max(1, Math.min(MAX_READ, Math.floor(READ_BYTES / Math.max(1, bytes / rows.length))));
}

/** When a request's scan stops: after this many entries read, or this long. */
export interface ScanLimits {
  readonly maxScanned: number;
  readonly maxMs: number;
}

/** How a bounded pass over the batches ended: how many were read, and the cursor to go on from (null: the end). */
export interface ScanPass {
  scanned: number;
  next: string | null;
}

/**
 * Goes through `batches`, handing each row to `visit` until it answers false (stop there: the
 * next pass starts after that row), the batches end, or `limits` are reached (checked between
 * reads, so one pass reads at most `maxScanned` + MAX_READ rows). `visit` of a batch's rows may
 * be followed by `afterBatch` (for actions taken a batch at a time).
 */
export async function boundedPass(
  batches: AsyncGenerator<ScannedBatch>,
  limits: ScanLimits,
  visit: (row: ScannedRow) => boolean,
  afterBatch?: (rows: readonly ScannedRow[]) => Promise<void>,
): Promise<ScanPass> {
  const deadline = Date.now() + limits.maxMs;
  const pass: ScanPass = { scanned: 0, next: null };
  try {
    for await (const batch of batches) {
      const taken: ScannedRow[] = [];
      let stoppedAt: string | undefined;
      for (const row of batch.rows) {
        pass.scanned++;
        taken.push(row);
        if (!visit(row)) {
          stoppedAt = row.id;
          break;
        }
      }
      if (afterBatch !== undefined) await afterBatch(taken);
      if (stoppedAt !== undefined && (stoppedAt !== batch.rows.at(-1)?.id || batch.after !== null)) {
        pass.next = taken.at(-1)!.cursor ?? `(${stoppedAt}`;
        return pass;
      }
      pass.next = batch.after;
      if (batch.after === null || pass.scanned >= limits.maxScanned || Date.now() >= deadline) return pass;
    }
    return pass;
  } finally {
    await batches.return(undefined);
  }
}
