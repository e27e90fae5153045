import { Inject, Injectable, Optional } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { REDIS_STREAMS_CONNECTION } from '../tokens.js';
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
import { deadLetterKeyGlob, eachPartition, mergePages, needsOnePartition, partitionsToAggregate, type PartitionPage } from './partitioned-dead-letters.js';
import { resolveListOptions, resolveSelection } from './dead-letter-arguments.js';
import type { PurgeResult, RedriveResult, RedriveStatus } from './dead-letter-results.js';
import { batchSizeOption } from './recovery-validation.js';
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
  /** On a partitioned stream: the glob of its partitions' keys (`{orders:p*}:dead`). */
  deadLetterKey: string;
  /** On a partitioned stream only: the dead-letter key of each partition, merged into this page in id order. */
  deadLetterKeys?: string[];
  /**
   * Dead letters of the given stream in id order. Entries without the dead-letter header (written
   * by someone else) and dead letters of other streams (a shared `deadLetterKey`) are skipped.
   */
  deadLetters: DeadLetter<Fields>[];
  /** `start` of the next page, or `null` when this page reached the end. */
  nextStart: string | null;
}

export type DeadLetterSelection = readonly string[] | 'all';

/**
 * Dead letters of a stream: move (used by recovery and by the server for undecodable entries),
 * list, inspect, redrive back to the source stream, purge. Constructible by hand:
 * `new DeadLetterService(redis)`.
 *
 * A partitioned stream (`orders`, its count recorded in `{orders}:partitions`) is aggregated:
 * `size`, `list` and `redrive` / `purge` of `'all'` cover every partition's dead-letter stream;
 * `inspect` and redrive / purge by id need the partition's key (`orders:p3`) and otherwise fail
 * with `RedisStreamsPartitionedStreamError`. Every call on a stream name reads that metadata key
 * once (a GET), unless `deadLetterKey` names the dead-letter stream.
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
    const partitions = await partitionsToAggregate(this.client, stream, options.deadLetterKey);
    if (partitions === undefined) {
      const page = await this.listOne(stream, deadLetterKey, shape, start, end, count);
      return { deadLetterKey, deadLetters: page.deadLetters, nextStart: page.full && page.lastRowId ? `(${page.lastRowId}` : null } as DeadLetterPage<FieldsOf<P>>;
    }
    const deadLetterKeys = partitions.map((partition) => this.deadLetterKeyFor(partition));
    const pages = await Promise.all(partitions.map((partition, i) => this.listOne(partition, deadLetterKeys[i]!, shape, start, end, count)));
    const merged = mergePages(pages, count);
    return { deadLetterKey: deadLetterKeyGlob(stream, this.keyOf), deadLetterKeys, ...merged } as DeadLetterPage<FieldsOf<P>>;
  }

  /** One page of one dead-letter stream: the dead letters of `stream` among `count` rows. */
  private async listOne(
    stream: string,
    deadLetterKey: string,
    shape: FieldsShape,
    start: string,
    end: string,
    count: number,
  ): Promise<PartitionPage<DeadLetter<ClaimedFields>>> {
    const rows = await this.range(deadLetterKey, shape, start, end, 'COUNT', count);
    const deadLetters: DeadLetter<ClaimedFields>[] = [];
    for (const [id, flat] of rows) {
      const deadLetter = parseDeadLetter(id, flat, shape);
      if (deadLetter?.sourceStream === stream) deadLetters.push(deadLetter);
    }
    return { deadLetters, full: rows.length === count, lastRowId: rows.at(-1)?.[0] };
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
    const partitions = await partitionsToAggregate(this.client, stream, options.deadLetterKey);
    if (partitions !== undefined) throw needsOnePartition(stream, partitions, 'inspect');
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
  async size(stream: string, options: DeadLetterKeyOption = {}): Promise<number> {
    const deadLetterKey = this.resolveKey(stream, options);
    const partitions = await partitionsToAggregate(this.client, stream, options.deadLetterKey);
    if (partitions === undefined) return this.client.xlen(deadLetterKey);
    const sizes = await Promise.all(partitions.map((partition) => this.client.xlen(this.deadLetterKeyFor(partition))));
    return sizes.reduce((sum, size) => sum + size, 0);
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
    const partitions = await partitionsToAggregate(this.client, stream, options.deadLetterKey);
    if (partitions !== undefined) {
      if (ids !== 'all') throw needsOnePartition(stream, partitions, 'redrive by id');
      const each = await eachPartition(partitions, (partition) => this.redrive(partition, 'all'));
      const [redriven, skipped] = [each.flatMap((one) => one.redriven), each.flatMap((one) => one.skipped)];
      return { stream, deadLetterKey: deadLetterKeyGlob(stream, this.keyOf), redriven, skipped, partitions: each };
    }
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
    const partitions = await partitionsToAggregate(this.client, stream, options.deadLetterKey);
    if (partitions !== undefined) {
      if (ids !== 'all') throw needsOnePartition(stream, partitions, 'purge by id');
      const each = await eachPartition(partitions, (partition) => this.purge(partition, 'all'));
      const purged = each.reduce((sum, one) => sum + one.purged, 0);
      return { stream, deadLetterKey: deadLetterKeyGlob(stream, this.keyOf), purged, notFound: [], skipped: [], partitions: each };
    }
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

export { resolveListOptions, resolveSelection } from './dead-letter-arguments.js';
export type { PurgeResult, RedriveResult, RedriveStatus } from './dead-letter-results.js';
