import { Injectable } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import { cursorParameter, deadLetterView, nameParameter, type DeadLetterView } from './dashboard-reads.js';
import { boundedPass, deadLetterBatches, entryBatches, type ScannedRow } from './dashboard-scan.js';
import { entryMatcher, matchParameter } from './entry-match.js';
import { fieldViews, PREVIEW_BYTES, type FieldView } from './field-views.js';

/** Entries one find request reads at most (in XRANGEs of at most MAX_READ); the page asks again from `next`. */
export const FIND_MAX_SCANNED = 5_000;
/** How long one find request reads at most, in ms (checked between reads). */
export const FIND_MAX_MS = 250;
/** Matches one find request sends at most: it stops at the one that reaches the limit. */
export const FIND_MAX_MATCHES = 50;
/** Bytes of previews one find request sends at most (besides the names and counts). */
export const FIND_MAX_PREVIEW_BYTES = 256 * 1024;

/** What a find looks through. */
export type FindTarget = 'entries' | 'dead-letters';

/** One page of a find: the matches among the entries read from `cursor` on, and where to go on. */
export interface FindView {
  in: FindTarget;
  /** Entries (XLEN) or dead letters in all, for the page's progress. */
  total: number;
  /** Entries (or dead letters) read by this request. */
  scanned: number;
  /** Matching entries (each field cut to PREVIEW_BYTES) or dead letters (as the list shows them). */
  matches: ({ id: string; fields: FieldView[] } | DeadLetterView)[];
  /** The cursor of the next request (`cursor=`), null when the scan reached the end. */
  next: string | null;
}

/**
 * Finds entries (or dead letters, by their original fields) of a stream whose field equals a
 * value or whose values contain a substring, a bounded page at a time: each request reads at
 * most FIND_MAX_SCANNED entries for at most FIND_MAX_MS and sends at most FIND_MAX_MATCHES
 * matches; the page asks again from `next` (and can stop at any time).
 */
@Injectable()
export class DashboardFind {
  constructor(private readonly context: DashboardContext) {}

  async find(query: { stream?: unknown; in?: unknown; field?: unknown; value?: unknown; contains?: unknown; cursor?: unknown }): Promise<FindView> {
    const stream = nameParameter('stream', query.stream);
    const target = targetParameter(query.in);
    const matches = entryMatcher(matchParameter(query));
    const start = cursorParameter(query.cursor);
    const found: FindView['matches'] = [];
    let bytes = 0;
    const visit = (row: ScannedRow): boolean => {
      if (!matches(row.flat)) return true;
      const view = row.letter === undefined ? { id: row.id, fields: fieldViews(row.flat, PREVIEW_BYTES) } : deadLetterView(row.letter, PREVIEW_BYTES);
      found.push(view);
      bytes += view.fields.reduce((sum, [name, value]) => sum + name.text.length + value.text.length, 0);
      return found.length < FIND_MAX_MATCHES && bytes < FIND_MAX_PREVIEW_BYTES;
    };
    const limits = { maxScanned: FIND_MAX_SCANNED, maxMs: FIND_MAX_MS };
    if (target === 'entries') {
      const [pass, total] = await Promise.all([boundedPass(entryBatches(this.context, stream, start), limits, visit), this.context.redis.xlen(stream)]);
      return { in: target, total, scanned: pass.scanned, matches: found, next: pass.next };
    }
    const [pass, total] = await Promise.all([
      boundedPass(deadLetterBatches(this.context, stream, start), limits, visit),
      this.context.deadLetters.size(stream, this.context.deadLetterKeyOption(stream)),
    ]);
    return { in: target, total, scanned: pass.scanned, matches: found, next: pass.next };
  }
}

/** `in=`: `entries` (the default) or `dead-letters`. */
export function targetParameter(value: unknown): FindTarget {
  if (value === undefined || value === '' || value === 'entries') return 'entries';
  if (value === 'dead-letters') return 'dead-letters';
  throw new RedisStreamsOptionError('in', `must be "entries" or "dead-letters", got ${describe(value)}`);
}
