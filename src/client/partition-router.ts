import { RedisStreamsOptionError } from '../errors.js';
import { partitionIndexOf, partitionStreamKey } from '../partitions/partition-keys.js';
import { checkPartitionCount } from '../partitions/partition-metadata.js';
import type { RedisClient } from '../redis/connection.js';
import { streamKeyFor } from '../redis/keys.js';
import { describe } from '../validation.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import type { RedisStreamsRecordOptions } from './redis-streams-record.js';

/** Where one emit or send goes; `ready` is set until the pattern's partition count was checked once. */
export interface Route {
  readonly stream: string;
  readonly ready: Promise<void> | undefined;
}

/**
 * Picks the stream key of each emit and send: the pattern's stream, or on a partitioned pattern
 * the partition of the record's `partitionKey` (else its `idempotencyKey`, else round robin). The
 * first call of a partitioned pattern records or compares its count (SET NX + GET of the metadata
 * key) before anything is written; a mismatch fails that call, and the next one checks again.
 */
export class PartitionRouter {
  private readonly turns = new Map<string, number>();
  private readonly checks = new Map<string, Promise<void>>();
  private readonly checked = new Set<string>();

  constructor(
    private readonly config: ResolvedClientOptions,
    /** The producer's connection (after connect). */
    private readonly client: () => RedisClient | undefined,
  ) {}

  route(pattern: string, options: RedisStreamsRecordOptions): Route {
    const stream = streamKeyFor(pattern, this.config.streamPrefix);
    const partitionKey = partitionKeyOf(options);
    const count = this.config.partitions.get(pattern);
    if (count === undefined) return { stream, ready: undefined };
    const index = partitionKey === undefined ? this.nextTurn(pattern, count) : partitionIndexOf(partitionKey, count);
    const ready = this.checked.has(pattern) ? undefined : this.check(pattern, stream, count);
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
    const client = this.client();
    if (!client) return Promise.reject(new Error('Connection closed'));
    pending = checkPartitionCount(client, stream, count).then(
      () => {
        this.checked.add(pattern);
      },
      (error: unknown) => {
        this.checks.delete(pattern);
        throw error;
      },
    );
    this.checks.set(pattern, pending);
    return pending;
  }
}

function partitionKeyOf(options: RedisStreamsRecordOptions): string | undefined {
  const { partitionKey } = options;
  if (partitionKey === undefined) return typeof options.idempotencyKey === 'string' ? options.idempotencyKey : undefined;
  if (typeof partitionKey !== 'string') throw new RedisStreamsOptionError('partitionKey', `must be a string, got ${describe(partitionKey)}`);
  return partitionKey;
}
