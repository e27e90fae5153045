import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { describe, isStreamId, nonEmptyStringOption } from '../validation.js';
import { missingStreamError, partitionCountHint, translateRedisError } from './claim.errors.js';
import { recordedPartitionCount } from '../partitions/partition-metadata.js';
import { Redactor } from '../redaction.js';
import { resolveClaimOptions, type ResolvedClaimOptions } from './claim-options.js';
import { createSink, DEFAULT_STORE_DIRECTORY, type ClaimSink } from './claim-sinks.js';
import type {
  ClaimModuleOptions,
  ClaimOptions,
  ClaimResultBase,
  ClaimResultFor,
  FetchType,
  FieldsFormat,
  FieldsOf,
  StreamClaimServiceOptions,
} from './claim.types.js';
import { parseAutoclaimReply } from './xautoclaim-reply.js';

/** `deletedIds` lists at most this many ids; `deletedCount` counts them all. */
export const DELETED_IDS_LIMIT = 1000;
/** Ids per XACK; larger lists are split into pipelined batches. */
export const ACK_BATCH_SIZE = 1000;

/**
 * Takes over entries of a consumer group that were delivered and never acknowledged (XAUTOCLAIM),
 * as docs/claim.md specifies: bounded by page size, records and pages, resumable through
 * `cursor`, reporting entries deleted while pending.
 *
 * Plain class without Nest imports, so the CLI starts fast; `StreamClaimService` is its injectable form.
 */
export class StreamClaimer {
  private readonly storeDirectory: string;
  /** Errors leave the service cleaned of the connection's password (a failed HELLO … AUTH carries it). */
  private readonly redactor: Redactor;

  constructor(
    private readonly redis: RedisClient,
    options?: ClaimModuleOptions | StreamClaimServiceOptions | null,
  ) {
    this.redactor = Redactor.for(redis);
    const claimOptions: StreamClaimServiceOptions | undefined =
      options && 'claim' in options ? options.claim : (options as StreamClaimServiceOptions | null | undefined) ?? undefined;
    this.storeDirectory = claimOptions?.storeDirectory ?? DEFAULT_STORE_DIRECTORY;
  }

  /**
   * Runs XAUTOCLAIM pages from `startId` until the cursor returns to `0-0`, `maxRecords` entries
   * were taken, or `maxPages` pages were scanned. Every option is checked before any command.
   * Each taken entry becomes pending for `consumer` with its delivery count raised by one.
   */
  async claim<F extends FetchType = 'FETCH', P extends FieldsFormat = 'object'>(
    options: ClaimOptions<F, P>,
  ): Promise<ClaimResultFor<F, FieldsOf<P>>> {
    const resolved = resolveClaimOptions(options);
    const shape = { stream: resolved.key, fieldsFormat: resolved.fieldsFormat, encoding: resolved.encoding };
    const sink = await createSink(resolved.fetchType, shape, this.storeDirectory);
    try {
      const scan = await this.scan(resolved, sink);
      const bodies = await sink.finish();
      return assemble(resolved, scan, bodies) as ClaimResultFor<F, FieldsOf<P>>;
    } catch (error) {
      await sink.abort().catch(() => undefined);
      throw this.redactor.error(await translateRedisError(error, resolved.key, resolved.group, () => this.streamExists(resolved.key), () => recordedPartitionCount(this.redis, resolved.key)));
    }
  }

  /**
   * Acknowledges `ids` (XACK) and resolves with how many were pending and are now acknowledged.
   * Ids that were not pending (already acked, or never delivered) are not counted.
   */
  async ack(key: string, group: string, ids: readonly string[]): Promise<number> {
    validateAckArguments(key, group, ids);
    if (ids.length === 0) return 0;
    const batches: Promise<number>[] = [];
    for (let start = 0; start < ids.length; start += ACK_BATCH_SIZE) {
      // Sent without waiting for each other: one connection pipelines them.
      batches.push(this.redis.xack(key, group, ...ids.slice(start, start + ACK_BATCH_SIZE)));
    }
    try {
      const acked = (await Promise.all(batches)).reduce((sum, n) => sum + Number(n), 0);
      // XACK on a missing key answers 0: a partitioned stream's name is an error naming its partitions.
      if (acked === 0 && !(await this.streamExists(key))) {
        const partitions = await partitionCountHint(() => recordedPartitionCount(this.redis, key));
        if (partitions > 1) throw missingStreamError(key, undefined, partitions);
      }
      return acked;
    } catch (error) {
      throw this.redactor.error(await translateRedisError(error, key, group, () => this.streamExists(key), () => recordedPartitionCount(this.redis, key)));
    }
  }

  private async scan(options: ResolvedClaimOptions, sink: ClaimSink): Promise<ScanState> {
    const { key, group, consumer, minIdleMs, count, maxRecords, maxPages } = options;
    const state: ScanState = { ids: [], cursor: options.startId, pages: 0, deletedIds: [], deletedCount: 0 };
    while (state.pages < maxPages && state.ids.length < maxRecords) {
      const pageSize = Math.min(count, maxRecords - state.ids.length);
      // base64 needs the exact bytes: the Buffer variant of the command (ids are read as text either way).
      const reply: unknown =
        options.encoding === 'base64'
          ? await this.redis.callBuffer('XAUTOCLAIM', key, group, consumer, minIdleMs, state.cursor, 'COUNT', pageSize)
          : await this.redis.xautoclaim(key, group, consumer, minIdleMs, state.cursor, 'COUNT', pageSize);
      state.pages++;
      const page = parseAutoclaimReply(reply);
      state.cursor = page.cursor;
      for (const entry of page.entries) state.ids.push(entry.id);
      if (page.entries.length > 0) await sink.accept(page.entries);
      state.deletedCount += page.deletedIds.length;
      for (const id of page.deletedIds) {
        if (state.deletedIds.length >= DELETED_IDS_LIMIT) break;
        state.deletedIds.push(id);
      }
      if (state.cursor === '0-0') break;
    }
    return state;
  }

  private async streamExists(key: string): Promise<boolean> {
    return (await this.redis.exists(key)) === 1;
  }
}

interface ScanState {
  ids: string[];
  cursor: string;
  pages: number;
  deletedIds: string[];
  deletedCount: number;
}

/** The result in docs/claim.md's field order (it is also the CLI's JSON output). */
function assemble(options: ResolvedClaimOptions, scan: ScanState, bodies: Record<string, unknown>): ClaimResultBase {
  return {
    key: options.key,
    group: options.group,
    consumer: options.consumer,
    count: scan.ids.length,
    ids: scan.ids,
    ...bodies,
    cursor: scan.cursor,
    completed: scan.cursor === '0-0',
    pages: scan.pages,
    deletedIds: scan.deletedIds,
    deletedCount: scan.deletedCount,
  };
}

/** Validates `ack` arguments (naming the bad one) before any command is sent. */
export function validateAckArguments(key: string, group: string, ids: readonly string[]): void {
  nonEmptyStringOption('key', key);
  nonEmptyStringOption('group', group);
  if (!Array.isArray(ids)) throw new RedisStreamsOptionError('ids', `must be an array of stream ids, got ${describe(ids)}`);
  for (let i = 0; i < ids.length; i++) {
    if (!isStreamId(ids[i])) {
      throw new RedisStreamsOptionError('ids', `ids[${i}] must be a stream id such as 1700000000000-0, got ${describe(ids[i])}`);
    }
  }
}
