import type { Logger } from '@nestjs/common';
import { RedisStreamsOptionError, RedisStreamsPartitionMetadataError, RedisStreamsPartitionMismatchError } from '../errors.js';
import { partitionIndexOf, partitionsMetadataKey, partitionStreamKey } from '../partitions/partition-keys.js';
import { checkPartitionCount, checkUnpartitioned } from '../partitions/partition-metadata.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import { streamKeyFor } from '../redis/keys.js';
import { describe } from '../validation.js';
import { ConnectionClosedError } from './connection-closed.js';
import { priorityLaneStream } from './priority-route.js';
import { isFinalFailure, sendWithRetries } from './idempotent-emit.js';
import type { ProducerConnection } from './producer-connection.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import type { RedisStreamsRecordOptions } from './redis-streams-record.js';

/** Where one emit or send goes; `ready` is set until the pattern's partition count was checked once. */
export interface Route {
  /** The partition's key, or the pattern's stream (unpartitioned, or `byContent`). */
  readonly stream: string;
  readonly ready: Promise<void> | undefined;
  /**
   * The partition count of an emit whose partition its encoded fields pick (content-partition.ts),
   * once they are known; `stream` is the pattern's stream until then.
   */
  readonly byContent?: number;
}

/**
 * How many patterns the router remembers as checked. A client that emits to patterns made up at
 * run time (`user.${id}`) would otherwise keep every one for its life; past this many the oldest
 * is forgotten, and its next emit checks it again (one GET).
 */
export const REMEMBERED_PATTERNS = 10_000;

/**
 * Picks the stream key of each emit and send: the pattern's stream, on a pattern with priority
 * lanes the lane of the record's `priority` (else the default lane), or on a partitioned pattern
 * the partition of the record's `partitionKey`, else of its `idempotencyKey`, else (an emit with
 * IDMPAUTO) of its content, else round robin. A repeat of an idempotent emit must meet the
 * partition where Redis keeps its first write's key; other entries spread evenly.
 *
 * The first call of each pattern checks the metadata key before anything is written: a
 * partitioned pattern records or compares its count (SET NX + GET), an unpartitioned one reads it
 * (one GET) and fails when the workers partitioned the stream, since nobody would read what it
 * writes to the stream itself. A mismatch fails that call, and the next one checks again; a
 * passed check is remembered (for the last REMEMBERED_PATTERNS patterns). Transient failures of
 * the check are retried like an idempotent XADD (`idempotence.retries`, none without it), until
 * `close()`.
 */
export class PartitionRouter {
  private readonly turns = new Map<string, number>();
  private readonly checks = new Map<string, Promise<void>>();
  /** In the order checked: the first is the first forgotten. */
  private readonly checked = new Set<string>();

  constructor(
    private readonly config: ResolvedClientOptions,
    /** The producer's connection (after connect). */
    private readonly producer: ProducerConnection,
    private readonly logger: Logger,
  ) {}

  /** The stream of a request (a request carries no IDMP: a key-less one goes round robin). */
  route(pattern: string, options: RedisStreamsRecordOptions): Route {
    return this.routeOf(pattern, options, false);
  }

  /** The stream of an event: with IDMPAUTO a key-less one goes by its content. */
  routeEvent(pattern: string, options: RedisStreamsRecordOptions): Route {
    return this.routeOf(pattern, options, this.config.idempotence?.auto === true);
  }

  private routeOf(pattern: string, options: RedisStreamsRecordOptions, autoIdempotent: boolean): Route {
    const stream = streamKeyFor(pattern, this.config.streamPrefix);
    const partitionKey = partitionKeyOf(options);
    const count = this.config.partitions.get(pattern) ?? 1;
    const lane = priorityLaneStream(pattern, stream, this.config.priorities.get(pattern), options.priority);
    const ready = this.checked.has(pattern) ? undefined : this.check(pattern, stream, count);
    if (lane !== undefined) return { stream: lane, ready };
    if (count === 1) return { stream, ready };
    if (partitionKey !== undefined) return { stream: partitionStreamKey(stream, partitionIndexOf(partitionKey, count)), ready };
    if (autoIdempotent) return { stream, ready, byContent: count };
    return { stream: partitionStreamKey(stream, this.nextTurn(pattern, count)), ready };
  }

  /** Round robin per pattern: entries without a key spread evenly. */
  private nextTurn(pattern: string, count: number): number {
    const turn = this.turns.get(pattern) ?? 0;
    this.turns.set(pattern, (turn + 1) % count);
    return turn;
  }

  /** One check per pattern at a time; remembered once it passed. */
  private check(pattern: string, stream: string, count: number): Promise<void> {
    let pending = this.checks.get(pattern);
    if (pending) return pending;
    const lifetime = this.producer.lifetime;
    if (!lifetime) return Promise.reject(new ConnectionClosedError());
    pending = this.retried(() => this.checkOnce(stream, count, lifetime), lifetime).then(
      () => {
        this.remember(pattern);
        this.checks.delete(pattern);
      },
      (error: unknown) => {
        this.checks.delete(pattern);
        throw error;
      },
    );
    this.checks.set(pattern, pending);
    return pending;
  }

  private remember(pattern: string): void {
    this.checked.add(pattern);
    if (this.checked.size <= REMEMBERED_PATTERNS) return;
    const oldest = this.checked.values().next().value as string;
    this.checked.delete(oldest);
  }

  private async checkOnce(stream: string, count: number, lifetime: AbortSignal): Promise<void> {
    const client = this.producer.client;
    if (!client || lifetime.aborted) throw new ConnectionClosedError();
    if (count > 1) return checkPartitionCount(client, stream, count);
    try {
      await checkUnpartitioned(client, stream);
    } catch (error) {
      if (!isNoPermission(error)) throw error;
      // ACL rules written before the metadata key existed: the check is skipped, not the emit.
      this.logger.warn(
        `cannot read "${partitionsMetadataKey(stream)}" (${(error as Error).message}): whether the workers partition "${stream}" is not checked; ` +
          'grant +get on that key (docs/security.md)',
      );
    }
  }

  private retried(check: () => Promise<void>, lifetime: AbortSignal): Promise<void> {
    const { idempotence } = this.config;
    if (idempotence === undefined || idempotence.retries === 0) return check();
    return sendWithRetries(check, idempotence.retries, idempotence.retryDelayMs, lifetime, isFinal);
  }
}

/** A mismatch, invalid metadata, a reply error (NOPERM, WRONGTYPE) or a closed client stays what it is on a retry. */
function isFinal(error: unknown): boolean {
  return error instanceof RedisStreamsPartitionMismatchError || error instanceof RedisStreamsPartitionMetadataError || isFinalFailure(error);
}

function partitionKeyOf(options: RedisStreamsRecordOptions): string | undefined {
  const { partitionKey } = options;
  if (partitionKey === undefined) {
    if (typeof options.idempotencyKey === 'string') return options.idempotencyKey;
    // A recurring emit registered again (every start-up) must land on its one hold, not round robin.
    return typeof options.repeat?.key === 'string' ? `repeat:${options.repeat.key}` : undefined;
  }
  if (typeof partitionKey !== 'string') throw new RedisStreamsOptionError('partitionKey', `must be a string, got ${describe(partitionKey)}`);
  return partitionKey;
}
