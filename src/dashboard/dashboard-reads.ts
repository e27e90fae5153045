import { Injectable } from '@nestjs/common';
import type { StreamFieldPairs } from '../claim/claimed-fields.js';
import type { PendingEntry } from '../claim/inspection.types.js';
import { redisNow } from '../redis/server-time.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { DeadLetter } from '../recovery/dead-letter-format.js';
import { describe, isStreamId, nonEmptyStringOption } from '../validation.js';
import { DashboardContext } from './dashboard-context.js';
import type { OverviewView } from './dashboard-views.js';
import { sampleTarget } from './stream-sampler.js';
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
  /** Each name and value of their fields cut to PREVIEW_BYTES: `api/dead-letter` has one whole. */
  deadLetters: DeadLetterView[];
  /** More dead letters than shown. */
  more: boolean;
}

/** The dashboard's read-only API: overview, dead letters, one dead letter, pending entries, one entry's fields. */
@Injectable()
export class DashboardReads {
  constructor(private readonly context: DashboardContext) {}

  /** The overview: every stream the page shows, sampled at once (see stream-sampler.ts for the cost). */
  async overview(named: readonly string[]): Promise<OverviewView> {
    if (named.length > MAX_NAMED_STREAMS) throw new RedisStreamsOptionError('stream', `at most ${MAX_NAMED_STREAMS} streams by name, got ${named.length}`);
    named.forEach((name, index) => nameParameter(`stream[${index}]`, name));
    const keys = this.context.targets(named);
    const targets = keys.targets.slice(0, this.context.options.maxStreams);
    const at = Date.now();
    // One TIME a refresh: every stream's due count is on the same clock reading.
    const redisNowMs = targets.length === 0 ? null : await redisNow(this.context.redis).catch(() => null);
    const parts = { inspector: this.context.inspector, redis: this.context.redis, deadLetterKeyOf: this.context.deadLetterKeyOf(keys), redisNowMs };
    const streams = await Promise.all(targets.map((target) => sampleTarget(parts, target)));
    return { at, streams, omitted: keys.targets.length - targets.length };
  }

  /**
   * The oldest dead letters of `stream` (a partitioned stream's merged), each field's name and
   * value cut to PREVIEW_BYTES: the page polls this, fields of megabytes must not ride along.
   */
  async deadLetterList(stream: unknown): Promise<DeadLettersView> {
    const name = nameParameter('stream', stream);
    // base64: the exact bytes, for fieldViews to tell UTF-8 from other bytes.
    const page = await this.context.deadLetters.list(name, { count: LIST_COUNT, fieldsFormat: 'pairs', encoding: 'base64', ...this.context.deadLetterKeyOption(name) });
    return { deadLetterKey: page.deadLetterKey, deadLetters: page.deadLetters.map((letter) => deadLetterView(letter, PREVIEW_BYTES)), more: page.nextStart !== null };
  }

  /** One dead letter of `stream` (a partition's key for a partitioned stream's) with its whole fields, or null when it is gone. */
  async deadLetter(stream: unknown, id: unknown): Promise<DeadLetterView | null> {
    const name = nameParameter('stream', stream);
    if (!isStreamId(id)) throw new RedisStreamsOptionError('id', `must be a stream id, got ${describe(id)}`);
    const letter = await this.context.deadLetters.inspect(name, id, { fieldsFormat: 'pairs', encoding: 'base64', ...this.context.deadLetterKeyOption(name) });
    return letter === null ? null : deadLetterView(letter);
  }

  /** The group's oldest pending entries: owner, idle time, deliveries. */
  async pending(stream: unknown, group: unknown): Promise<{ entries: PendingEntry[]; more: boolean }> {
    const entries = await this.context.inspector.pendingRange(nameParameter('stream', stream), nameParameter('group', group), { count: LIST_COUNT + 1, retryConsumer: false });
    return { entries: entries.slice(0, LIST_COUNT), more: entries.length > LIST_COUNT };
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
function deadLetterView(letter: DeadLetter<StreamFieldPairs>, limit?: number): DeadLetterView {
  return { ...letter, fields: fieldViews(letter.fields.flat().map((base64) => Buffer.from(base64, 'base64')), limit) };
}

/** A stream, group or consumer name from a request: a non-empty string of bounded length. */
export function nameParameter(option: string, value: unknown): string {
  const name = nonEmptyStringOption(option, value);
  if (name.length > MAX_NAME_LENGTH) throw new RedisStreamsOptionError(option, `must be at most ${MAX_NAME_LENGTH} characters, got ${name.length}`);
  return name;
}
