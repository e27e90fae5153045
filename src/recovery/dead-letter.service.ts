import { Inject, Injectable, Optional } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { REDIS_STREAMS_CONNECTION } from '../module/tokens.js';
import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey as defaultDeadLetterKey } from '../redis/keys.js';
import { describe, integerOption, isStreamId, nonEmptyStringOption } from '../validation.js';
import { Redactor, withRedactedRejections } from '../redaction.js';
import { resolveFieldsShape, type FieldsShape } from '../claim/claimed-fields.js';
import type { ClaimedFields, FieldEncoding, FieldsFormat, FieldsOf } from '../claim/claim.types.js';
import type { StreamFields } from '../codec/wire-format.js';
import { deadLetterKeyOption, type DeadLetterKeySetting } from './dead-letter-key-option.js';
import { parseDeadLetter, type DeadLetter } from './dead-letter-format.js';
import { moveToDeadLetter, type DeadLetterMoveResult, type MoveToDeadLetterRequest } from './dead-letter-move.js';
import { batchSizeOption, streamIdListOption } from './recovery-validation.js';
import { batches, recoveryScripts } from './scripts/loader.js';

/** DI token of the optional `DeadLetterServiceOptions`. */
export const REDIS_STREAMS_DEAD_LETTER_OPTIONS = Symbol('REDIS_STREAMS_DEAD_LETTER_OPTIONS');

export interface DeadLetterServiceOptions {
  /**
   * Dead-letter stream key of a source stream: `(stream) => key` or a template with `%s` for the
   * stream (`'{%s}:dlq'`, the form the CLI's `--dead-letter-key` takes too). Default
   * `deadLetterKey(stream)` (`orders` → `{orders}:dead`). On Cluster it must hash to the source
   * stream's slot. As the module's `deadLetters.deadLetterKey` it is also the key of every server
   * `RedisStreamsServerFactory` builds.
   */
  deadLetterKey?: DeadLetterKeySetting;
  /** Approximate MAXLEN of dead-letter streams; 0 (default) never trims dead letters. */
  maxLen?: number;
  /** Ids per script call or page, 1..1000. Default 100. */
  batchSize?: number;
}

export interface DeadLetterKeyOption {
  /** Use this dead-letter stream instead of the configured one for `stream`. */
  deadLetterKey?: string;
}

/** How `list` and `inspect` hand out the original fields: the claim's options, same meaning. */
export interface DeadLetterFieldsOptions<P extends FieldsFormat = FieldsFormat> {
  /**
   * `object` (default): `{ name: value }`: integer-like names (`2`, `10`) come first in ascending
   * order and of duplicate names the last wins. `pairs`: `[[name, value], …]` in stream order with
   * every duplicate, as the entry was stored.
   */
  fieldsFormat?: P;
  /** `utf8` (default): text, bytes that are not UTF-8 become U+FFFD. `base64`: names and values are base64 of their exact bytes. */
  encoding?: FieldEncoding;
}

export interface InspectDeadLetterOptions<P extends FieldsFormat = FieldsFormat> extends DeadLetterKeyOption, DeadLetterFieldsOptions<P> {}

export interface ListDeadLettersOptions<P extends FieldsFormat = FieldsFormat> extends DeadLetterKeyOption, DeadLetterFieldsOptions<P> {
  /** First id (inclusive), `(id` (exclusive) or `-` (default). Pass a page's `nextStart` to continue. */
  start?: string;
  /** Last id (inclusive) or `+` (default). */
  end?: string;
  /** Entries per page, 1..10000. Default 100. */
  count?: number;
}

export interface DeadLetterPage<Fields extends ClaimedFields = StreamFields> {
  deadLetterKey: string;
  /**
   * Dead letters of the given stream in id order. Entries without the dead-letter header (written
   * by someone else) and dead letters of other streams (a shared `deadLetterKey`) are skipped.
   */
  deadLetters: DeadLetter<Fields>[];
  /** `start` of the next page, or `null` when this page reached the end. */
  nextStart: string | null;
}

export type DeadLetterSelection = readonly string[] | 'all';

export type RedriveStatus =
  | 'redriven'
  /** No such dead letter (already redriven or purged). */
  | 'not_found'
  /** A tombstone carries no body: nothing to redrive (purge it). */
  | 'tombstone'
  /** The dead letter came from another stream. */
  | 'other_stream'
  /** The entry has no dead-letter header. */
  | 'not_dead_letter';

export interface RedriveResult {
  stream: string;
  deadLetterKey: string;
  /** Dead letters re-added to `stream` (as new entries) and removed from the dead-letter stream. */
  redriven: { deadLetterId: string; newId: string }[];
  /** Dead letters left where they are, with the reason. */
  skipped: { deadLetterId: string; status: Exclude<RedriveStatus, 'redriven'> }[];
}

export interface PurgeResult {
  stream: string;
  deadLetterKey: string;
  /** Dead letters deleted. */
  purged: number;
  /** Requested ids that were not there (explicit ids only). */
  notFound: string[];
  /** Requested ids left alone: a dead letter of another stream, or an entry without the dead-letter header. */
  skipped: { deadLetterId: string; status: 'other_stream' | 'not_dead_letter' }[];
}

const MAX_LIST_COUNT = 10_000;

/**
 * Dead letters of a stream: move (used by recovery and by the server for undecodable entries),
 * list, inspect, redrive back to the source stream, purge. Constructible by hand:
 * `new DeadLetterService(redis)`.
 */
@Injectable()
export class DeadLetterService {
  private readonly keyOf: (stream: string) => string;
  private readonly maxLen: number;
  private readonly batchSize: number;
  private readonly client: RedisClient;

  constructor(
    @Inject(REDIS_STREAMS_CONNECTION) client: RedisClient,
    @Optional() @Inject(REDIS_STREAMS_DEAD_LETTER_OPTIONS) options: DeadLetterServiceOptions = {},
  ) {
    // Every command's failure leaves the service cleaned of the connection's password.
    this.client = withRedactedRejections(client, Redactor.for(client));
    this.keyOf = deadLetterKeyOption('deadLetterKey', options?.deadLetterKey) ?? defaultDeadLetterKey;
    this.maxLen = integerOption('maxLen', options?.maxLen, 0, 0);
    this.batchSize = batchSizeOption('batchSize', options?.batchSize);
  }

  /** The dead-letter stream key of `stream`. */
  deadLetterKeyFor(stream: string): string {
    return nonEmptyStringOption('deadLetterKey', this.keyOf(nonEmptyStringOption('stream', stream)));
  }

  /** Atomic move of pending entries to the dead-letter stream; see `moveToDeadLetter`. */
  moveToDeadLetter(request: MoveToDeadLetterRequest): Promise<DeadLetterMoveResult> {
    return moveToDeadLetter(this.client, {
      ...request,
      maxLen: request?.maxLen ?? this.maxLen,
      batchSize: request?.batchSize ?? this.batchSize,
      deadLetterKey: request?.deadLetterKey ?? this.deadLetterKeyFor(request?.stream),
    });
  }

  /** One page of dead letters, oldest first; the original fields shaped per `fieldsFormat` and `encoding`. */
  async list<P extends FieldsFormat = 'object'>(
    stream: string,
    options: ListDeadLettersOptions<P> = {},
  ): Promise<DeadLetterPage<FieldsOf<P>>> {
    const deadLetterKey = this.resolveKey(stream, options);
    const { start, end, count } = resolveListOptions(options);
    const shape = resolveFieldsShape(options);
    const rows = await this.range(deadLetterKey, shape, start, end, 'COUNT', count);
    const deadLetters: DeadLetter<ClaimedFields>[] = [];
    for (const [id, flat] of rows) {
      const deadLetter = parseDeadLetter(id, flat, shape);
      if (deadLetter?.sourceStream === stream) deadLetters.push(deadLetter);
    }
    const last = rows.at(-1);
    const page = { deadLetterKey, deadLetters, nextStart: rows.length === count && last ? `(${last[0]}` : null };
    return page as DeadLetterPage<FieldsOf<P>>;
  }

  /** One dead letter of `stream` by its id, or `null` (also for a dead letter of another stream). */
  async inspect<P extends FieldsFormat = 'object'>(
    stream: string,
    deadLetterId: string,
    options: InspectDeadLetterOptions<P> = {},
  ): Promise<DeadLetter<FieldsOf<P>> | null> {
    const deadLetterKey = this.resolveKey(stream, options);
    if (!isStreamId(deadLetterId)) {
      throw new RedisStreamsOptionError('deadLetterId', `must be a stream id, got ${describe(deadLetterId)}`);
    }
    const shape = resolveFieldsShape(options);
    const [row] = await this.range(deadLetterKey, shape, deadLetterId, deadLetterId);
    const deadLetter = row && parseDeadLetter(row[0], row[1], shape);
    return deadLetter?.sourceStream === stream ? (deadLetter as DeadLetter<FieldsOf<P>>) : null;
  }

  /** XRANGE rows; for `base64` through the Buffer variant of the command, so the exact bytes are kept. */
  private async range(key: string, shape: FieldsShape, ...args: (string | number)[]): Promise<[string, (string | Buffer)[]][]> {
    if (shape.encoding === 'utf8') return this.client.xrange(key, ...(args as [string, string]));
    const rows = (await this.client.callBuffer('XRANGE', key, ...args)) as [Buffer, Buffer[]][];
    return rows.map(([id, flat]) => [String(id), flat]);
  }

  /** Number of entries in the dead-letter stream of `stream`. */
  size(stream: string, options: DeadLetterKeyOption = {}): Promise<number> {
    return this.client.xlen(this.resolveKey(stream, options));
  }

  /**
   * Adds each dead letter back to `stream` as a NEW entry (original fields plus `dlq:redriven-from`,
   * `dlq:previous-id`, `dlq:previous-deliveries`, `dlq:previous-reason`, `dlq:redrives`), then
   * deletes the dead letter, atomically per batch (one Lua script: XADD first, XDEL last). Every
   * consumer group of `stream` sees the new entry. `'all'` covers the dead letters present when
   * the call starts.
   */
  async redrive(stream: string, selection: DeadLetterSelection, options: DeadLetterKeyOption = {}): Promise<RedriveResult> {
    const deadLetterKey = this.resolveKey(stream, options);
    const ids = resolveSelection(selection);
    const result: RedriveResult = { stream, deadLetterKey, redriven: [], skipped: [] };
    const scripts = recoveryScripts(this.client);
    const redriveBatch = async (batch: readonly string[]) => {
      if (batch.length === 0) return;
      const rows = await scripts.nrsRedrive(deadLetterKey, stream, batch.length, ...batch);
      for (const row of rows) {
        const [deadLetterId, status, newId] = row.map(String) as [string, RedriveStatus, string];
        if (status === 'redriven') result.redriven.push({ deadLetterId, newId });
        else result.skipped.push({ deadLetterId, status });
      }
    };
    if (ids === 'all') {
      for await (const page of this.snapshotPages(deadLetterKey)) await redriveBatch(this.ofStream(page, stream));
    } else {
      for (const batch of batches(ids, this.batchSize)) await redriveBatch(batch);
    }
    return result;
  }

  /**
   * Deletes dead letters of `stream`; requested ids of another stream's dead letters (a shared
   * key) are left alone and listed in `skipped`. `'all'` deletes those present when the call starts.
   */
  async purge(stream: string, selection: DeadLetterSelection, options: DeadLetterKeyOption = {}): Promise<PurgeResult> {
    const deadLetterKey = this.resolveKey(stream, options);
    const ids = resolveSelection(selection);
    const result: PurgeResult = { stream, deadLetterKey, purged: 0, notFound: [], skipped: [] };
    if (ids === 'all') {
      for await (const page of this.snapshotPages(deadLetterKey)) {
        const own = this.ofStream(page, stream);
        if (own.length > 0) result.purged += await this.client.xdel(deadLetterKey, ...own);
      }
      return result;
    }
    for (const batch of batches(ids, this.batchSize)) {
      // Look the ids up first: XDEL reports only a count, and only this stream's letters may go.
      // (An entry never changes once written, so what was checked is what XDEL deletes.)
      const found = await Promise.all(batch.map((id) => this.client.xrange(deadLetterKey, id, id)));
      const own: string[] = [];
      batch.forEach((id, i) => {
        const row = found[i]![0];
        if (row === undefined) result.notFound.push(id);
        else {
          const letter = parseDeadLetter(row[0], row[1]);
          if (letter?.sourceStream === stream) own.push(id);
          else result.skipped.push({ deadLetterId: id, status: letter === undefined ? 'not_dead_letter' : 'other_stream' });
        }
      });
      if (own.length > 0) result.purged += await this.client.xdel(deadLetterKey, ...own);
    }
    return result;
  }

  /** Ids of the dead letters in `page` that came from `stream` (a dead-letter key may be shared). */
  private ofStream(page: readonly [string, string[]][], stream: string): string[] {
    return page.filter(([id, flat]) => parseDeadLetter(id, flat)?.sourceStream === stream).map(([id]) => id);
  }

  private resolveKey(stream: string, options: DeadLetterKeyOption | undefined): string {
    nonEmptyStringOption('stream', stream);
    if (options === null || typeof options !== 'object') {
      throw new RedisStreamsOptionError('options', `must be an object, got ${describe(options)}`);
    }
    const key = options.deadLetterKey === undefined
      ? this.deadLetterKeyFor(stream)
      : nonEmptyStringOption('deadLetterKey', options.deadLetterKey);
    if (key === stream) throw new RedisStreamsOptionError('deadLetterKey', `must differ from the stream key "${stream}"`);
    return key;
  }

  /** Pages of the dead-letter stream up to its last id at the start (new dead letters are not chased). */
  private async *snapshotPages(deadLetterKey: string): AsyncGenerator<[string, string[]][]> {
    const [newest] = await this.client.xrevrange(deadLetterKey, '+', '-', 'COUNT', 1);
    if (!newest) return;
    const last = newest[0];
    let start = '-';
    for (;;) {
      const page = await this.client.xrange(deadLetterKey, start, last, 'COUNT', this.batchSize);
      if (page.length === 0) return;
      yield page;
      const lastSeen = page.at(-1)![0];
      if (lastSeen === last || page.length < this.batchSize) return;
      start = `(${lastSeen}`;
    }
  }
}

function rangeBoundOption(option: string, value: unknown, fallback: '-' | '+'): string {
  if (value === undefined) return fallback;
  if (typeof value === 'string') {
    const id = value.startsWith('(') ? value.slice(1) : value;
    if (value === fallback || isStreamId(id)) return value;
  }
  throw new RedisStreamsOptionError(option, `must be "${fallback}", a stream id or "(" followed by a stream id; got ${describe(value)}`);
}

/** Validated `start`, `end` and `count` of `list` (throws RedisStreamsOptionError naming the option). */
export function resolveListOptions(options: ListDeadLettersOptions): { start: string; end: string; count: number } {
  return {
    start: rangeBoundOption('start', options.start, '-'),
    end: rangeBoundOption('end', options.end, '+'),
    count: integerOption('count', options.count, 100, 1, MAX_LIST_COUNT),
  };
}

/** Validated dead-letter ids of `redrive` / `purge` (deduplicated), or `'all'`. */
export function resolveSelection(selection: unknown): DeadLetterSelection {
  if (selection === 'all') return 'all';
  if (!Array.isArray(selection)) {
    throw new RedisStreamsOptionError('ids', `must be "all" or an array of dead-letter ids, got ${describe(selection)}`);
  }
  return streamIdListOption('ids', selection);
}
