import type { Logger } from '@nestjs/common';
import { RedisStreamsOptionError, RedisStreamsPartitionMetadataError, RedisStreamsPartitionMismatchError } from '../errors.js';
import { partitionIndexOf, partitionsMetadataKey, partitionStreamKey } from '../partitions/partition-keys.js';
import { checkPartitionCount, checkUnpartitioned, isNoPermission } from '../partitions/partition-metadata.js';
import type { RedisClient } from '../redis/connection.js';
import { streamKeyFor } from '../redis/keys.js';
import { describe } from '../validation.js';
import { sendWithRetries } from './idempotent-emit.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import type { RedisStreamsRecordOptions } from './redis-streams-record.js';

/** Where one emit or send goes; `ready` is set until the pattern's partition count was checked once. */
export interface Route {
  readonly stream: string;
  readonly ready: Promise<void> | undefined;
}

/**
 * Picks the stream key of each emit and send: the pattern's stream, or on a partitioned pattern
 * the partition of the record's `partitionKey` (else its `idempotencyKey`, else round robin).
 *
 * The first call of each pattern checks the metadata key before anything is written: a
 * partitioned pattern records or compares its count (SET NX + GET), an unpartitioned one reads it
 * (one GET) and fails when the workers partitioned the stream, since nobody would read what it
 * writes to the stream itself. A mismatch fails that call, and the next one checks again; a
 * passed check is remembered for the client's life. Transient failures of the check are retried
 * like an idempotent XADD (`idempotence.retries`, none without it).
 */
export class PartitionRouter {
  private readonly turns = new Map<string, number>();
  private readonly checks = new Map<string, Promise<void>>();
  private readonly checked = new Set<string>();

  constructor(
    private readonly config: ResolvedClientOptions,
    /** The producer's connection (after connect). */
    private readonly client: () => RedisClient | undefined,
    private readonly logger: Logger,
  ) {}

  route(pattern: string, options: RedisStreamsRecordOptions): Route {
    const stream = streamKeyFor(pattern, this.config.streamPrefix);
    const partitionKey = partitionKeyOf(options);
    const count = this.config.partitions.get(pattern) ?? 1;
    const ready = this.checked.has(pattern) ? undefined : this.check(pattern, stream, count);
    if (count === 1) return { stream, ready };
    const index = partitionKey === undefined ? this.nextTurn(pattern, count) : partitionIndexOf(partitionKey, count);
    return { stream: partitionStreamKey(stream, index), ready };
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
    if (!this.client()) return Promise.reject(new Error('Connection closed'));
    pending = this.retried(() => this.checkOnce(stream, count)).then(
      () => {
        this.checked.add(pattern);
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

  private async checkOnce(stream: string, count: number): Promise<void> {
    const client = this.client();
    if (!client) throw new Error('Connection closed');
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

  private retried(check: () => Promise<void>): Promise<void> {
    const { idempotence } = this.config;
    if (idempotence === undefined || idempotence.retries === 0) return check();
    return sendWithRetries(check, idempotence.retries, idempotence.retryDelayMs, isFinal);
  }
}

/** A mismatch, invalid metadata or a reply error (NOPERM) stays what it is on a retry. */
function isFinal(error: unknown): boolean {
  return error instanceof RedisStreamsPartitionMismatchError || error instanceof RedisStreamsPartitionMetadataError || (error as Error).name === 'ReplyError';
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
