import { Injectable } from '@nestjs/common';
import { promoteDelayedNow } from '../delayed/delayed-inspection.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';
import { DashboardActions } from './dashboard-actions.js';
import { DashboardContext } from './dashboard-context.js';
import { cursorParameter, delayedCursorParameter, nameParameter } from './dashboard-reads.js';
import { boundedPass, deadLetterBatches, heldBatches, pendingBatches, type ScannedBatch, type ScannedRow } from './dashboard-scan.js';
import { entryMatcher, optionalMatchParameter, type EntryMatch } from './entry-match.js';

/** Entries (dead letters, pending entries, held entries) one bulk request goes through at most; the page asks again from `next`. */
export const BULK_MAX_SCANNED = 2_000;
/** How long one bulk request reads and acts at most, in ms (checked between reads). */
export const BULK_MAX_MS = 1_000;
/** Skipped ones a bulk answer lists at most (all are counted). */
export const BULK_SKIPPED_LISTED = 100;

/** One bounded step of a bulk action: what it did to the entries it went through, and where to go on. */
export interface BulkView {
  /** Entries (dead letters, pending entries, held entries) gone through by this request. */
  scanned: number;
  /** Of those, matching the filter (all without one). */
  matched: number;
  /** Redriven, purged, acknowledged or promoted by this request. */
  done: number;
  /** Promote: other held entries already due that the promotion took along. */
  promotedAlong: number;
  /** Matching ones left alone, counted by reason. */
  skipped: Record<string, number>;
  /** The first BULK_SKIPPED_LISTED of them (id or hold, and why). */
  skippedIds: { id: string; reason: string }[];
  /** The cursor of the next request (`cursor`), null when the list has been gone through. */
  next: string | null;
}

/**
 * Redrive, purge, ack and promote of every entry of a list that matches a filter (a field's
 * value, a substring; none: all of the list), a bounded step at a time: each request reads at
 * most BULK_MAX_SCANNED from its cursor (in reads of at most MAX_READ, never one unbounded
 * command), acts on each read's matches at once, logs what it did, and answers `next`.
 */
@Injectable()
export class DashboardBulk {
  constructor(
    private readonly context: DashboardContext,
    private readonly actions: DashboardActions,
  ) {}

  /** Dead letters of the stream back to it as new entries. */
  redrive(body: unknown): Promise<BulkView> {
    const { stream, match, cursor } = this.request(body);
    return this.step('bulk redrive dead letters', { stream }, match, cursor, deadLetterBatches(this.context, stream, cursorParameter(cursor)), async (rows, outcome) => {
      for (const [source, ids] of bySourceStream(rows)) {
        const result = await this.context.deadLetters.redrive(source, ids, this.context.deadLetterKeyOption(source));
        outcome.done += result.redriven.length;
        for (const skipped of result.skipped) outcome.skip(skipped.deadLetterId, skipped.status);
      }
    });
  }

  /** Dead letters of the stream deleted. */
  purge(body: unknown): Promise<BulkView> {
    const { stream, match, cursor } = this.request(body);
    return this.step('bulk purge dead letters', { stream }, match, cursor, deadLetterBatches(this.context, stream, cursorParameter(cursor)), async (rows, outcome) => {
      for (const [source, ids] of bySourceStream(rows)) {
        const result = await this.context.deadLetters.purge(source, ids, this.context.deadLetterKeyOption(source));
        outcome.done += result.purged;
        for (const id of result.notFound) outcome.skip(id, 'not_found');
        for (const skipped of result.skipped) outcome.skip(skipped.deadLetterId, skipped.status);
      }
    });
  }

  /** Pending entries of a group acknowledged (XACK): with a filter, by their fields in the stream. */
  ack(body: unknown): Promise<BulkView> {
    const { stream, match, cursor, request } = this.request(body);
    const group = nameParameter('group', request.group);
    const batches = pendingBatches(this.context, stream, group, cursorParameter(cursor), match !== undefined);
    return this.step('bulk ack pending entries', { stream, group }, match, cursor, batches, async (rows, outcome) => {
      const acked = await this.context.claimer.ack(stream, group, rows.map((row) => row.id));
      outcome.done += acked;
      // XACK counts what it acknowledged; the others were acknowledged meanwhile.
      if (acked < rows.length) outcome.skip(null, 'not_pending', rows.length - acked);
    });
  }

  /**
   * Held delayed entries promoted now (made due, then promoted; entries already due go along).
   * Recurring schedules are left alone: promoting one schedules its next run, which a filter-wide
   * pass would meet again.
   */
  promote(body: unknown): Promise<BulkView> {
    const { stream, match, cursor, request } = this.request(body);
    const holds = request.holds === undefined ? undefined : holdsParameter(request.holds);
    if (holds !== undefined && (match !== undefined || cursor !== undefined)) throw new RedisStreamsOptionError('holds', 'a selection of holds takes no filter and no cursor');
    const batches = holds === undefined ? heldBatches(this.context, stream, delayedCursorParameter(cursor)) : selectedHolds(holds);
    return this.step('bulk promote delayed entries', { stream, ...(holds === undefined ? {} : { holds }) }, match, cursor, batches, async (rows, outcome) => {
      const once = rows.filter((row) => row.held === undefined || (row.held.everyMs === null && row.held.cron === null));
      for (const row of rows) if (!once.includes(row)) outcome.skip(row.id, 'recurring');
      if (once.length === 0) return;
      const result = await promoteDelayedNow(this.context.redis, stream, once.map((row) => row.id));
      const asked = new Set(once.map((row) => row.id));
      outcome.done += result.promoted.filter((one) => asked.has(one.hold)).length;
      outcome.alongWith += result.promoted.filter((one) => !asked.has(one.hold)).length;
      const answered = new Set([...result.promoted, ...result.skipped].map((one) => one.hold));
      for (const skipped of result.skipped) if (asked.has(skipped.hold)) outcome.skip(skipped.hold, skipped.status);
      for (const hold of asked) if (!answered.has(hold)) outcome.skip(hold, 'not_held');
    });
  }

  private request(body: unknown): { stream: string; match: EntryMatch | undefined; cursor: unknown; request: Record<string, unknown> } {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RedisStreamsOptionError('body', `must be a JSON object, got ${describe(body)}`);
    const request = body as Record<string, unknown>;
    return { stream: nameParameter('stream', request.stream), match: optionalMatchParameter(request), cursor: request.cursor ?? undefined, request };
  }

  /** One bounded pass: the matching rows of each read acted on by `act`, logged with the outcome. */
  private step(
    action: string,
    subject: Record<string, string | readonly string[]>,
    match: EntryMatch | undefined,
    cursor: unknown,
    batches: AsyncGenerator<ScannedBatch>,
    act: (rows: ScannedRow[], outcome: Outcome) => Promise<void>,
  ): Promise<BulkView> {
    const matches = match === undefined ? () => true : entryMatcher(match);
    const outcome = new Outcome();
    const logged = { ...subject, ...(match ?? { filter: 'all' }), from: typeof cursor === 'string' ? cursor : 'start' };
    return this.actions.logged(
      action,
      logged,
      async () => {
        const pass = await boundedPass(batches, { maxScanned: BULK_MAX_SCANNED, maxMs: BULK_MAX_MS }, () => true, async (rows) => {
          const taken = rows.filter((row) => {
            if (row.gone) {
              if (match !== undefined) outcome.skip(row.id, 'body_gone');
              return match === undefined;
            }
            return matches(row.flat);
          });
          outcome.matched += taken.length;
          if (taken.length > 0) await act(taken, outcome);
        });
        return outcome.view(pass.scanned, pass.next);
      },
      (view) => `${view.scanned} gone through, ${view.matched} matching, ${view.done} done, ${Object.entries(view.skipped).map(([reason, count]) => `${count} ${reason}`).join(', ') || '0 skipped'}${outcome.alongWith > 0 ? `, ${outcome.alongWith} already due promoted along` : ''}, next ${JSON.stringify(view.next)}`,
    );
  }
}

/** What a bulk step did so far. */
class Outcome {
  matched = 0;
  done = 0;
  /** Promote: other entries already due that went along. */
  alongWith = 0;
  private readonly skipped: Record<string, number> = {};
  private readonly skippedIds: { id: string; reason: string }[] = [];

  /** `count` left alone for `reason`; listed by `id` unless it is null (XACK tells how many, not which). */
  skip(id: string | null, reason: string, count = 1): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + count;
    if (id !== null && this.skippedIds.length < BULK_SKIPPED_LISTED) this.skippedIds.push({ id, reason });
  }

  view(scanned: number, next: string | null): BulkView {
    return { scanned, matched: this.matched, done: this.done, promotedAlong: this.alongWith, skipped: this.skipped, skippedIds: this.skippedIds, next };
  }
}

/** Dead-letter ids by the stream (partition) they came from: redrive and purge by id take a partition's key. */
function bySourceStream(rows: readonly ScannedRow[]): Map<string, string[]> {
  const byStream = new Map<string, string[]>();
  for (const row of rows) {
    const source = row.letter!.sourceStream;
    byStream.set(source, [...(byStream.get(source) ?? []), row.id]);
  }
  return byStream;
}

/** The page's selection of holds as one read (their fields unknown: a filter does not apply to a selection). */
async function* selectedHolds(holds: readonly string[]): AsyncGenerator<ScannedBatch> {
  yield { rows: holds.map((hold) => ({ id: hold, flat: [] })), after: null };
}

function holdsParameter(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 1000) throw new RedisStreamsOptionError('holds', `must name 1 to 1000 hold ids, got ${describe(value)}`);
  return value.map((hold, index) => nameParameter(`holds[${index}]`, hold));
}
