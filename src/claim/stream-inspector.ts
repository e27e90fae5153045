import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { timeReplyMs } from '../redis/server-time.js';
import { describe, integerOption, isStreamId, nonEmptyStringOption } from '../validation.js';
import { translateRedisError } from './claim.errors.js';
import { recordedPartitionCount } from '../partitions/partition-metadata.js';
import { Redactor } from '../redaction.js';
import { durationMillisOption } from '../duration.js';
import { DEFAULT_RETRY_CONSUMER, readRetryRecords } from './retry-record.js';
import {
  parseConsumers,
  parseGroups,
  parsePendingEntries,
  parsePendingSummary,
  parseStreamInfo,
} from './inspection-replies.js';
import type {
  ConsumerInfo,
  GroupInfo,
  PendingEntry,
  PendingRangeOptions,
  PendingSummary,
  StreamInfo,
} from './inspection.types.js';

/**
 * Read-only views of a stream, its groups, consumers and pending entries (XPENDING, XINFO).
 * Plain class without Nest imports (the CLI uses it); `StreamInspectionService` is its injectable form.
 */
export class StreamInspector {
  /** Errors leave cleaned of the connection's password. */
  private readonly redactor: Redactor;

  constructor(private readonly redis: RedisClient) {
    this.redactor = Redactor.for(redis);
  }

  /** XPENDING summary: how many entries are pending, the id range, and per-consumer counts. */
  async pendingSummary(key: string, group: string): Promise<PendingSummary> {
    nonEmptyStringOption('key', key);
    nonEmptyStringOption('group', group);
    const reply = await this.run(key, group, ['XPENDING', key, group]);
    return parsePendingSummary(key, group, reply);
  }

  /**
   * XPENDING extended form: pending entries with owner, idle time and delivery count. Entries of
   * the retry consumer also get `retry` (next retry time, last error) from their retry records.
   */
  async pendingRange(key: string, group: string, options: PendingRangeOptions = {}): Promise<PendingEntry[]> {
    const { start, end, count, consumer, minIdleMs, retryConsumer } = resolvePendingRangeOptions(key, group, options);
    const args: (string | number)[] = ['XPENDING', key, group];
    if (minIdleMs !== undefined) args.push('IDLE', minIdleMs);
    args.push(start, end, count);
    if (consumer !== undefined) args.push(consumer);
    const rows = parsePendingEntries(await this.run(key, group, args));
    if (retryConsumer !== false) await this.addRetryDetails(key, group, retryConsumer, rows);
    return rows;
  }

  private async addRetryDetails(key: string, group: string, retryConsumer: string, rows: PendingEntry[]): Promise<void> {
    const waiting = rows.filter((row) => row.consumer === retryConsumer);
    if (waiting.length === 0) return;
    // The server's clock: idle times are on it, and nextRetryAt must not depend on this host's.
    const [records, time] = await Promise.all([
      readRetryRecords(this.redis, key, group, waiting.map((row) => row.id)),
      this.redis.call('TIME') as Promise<[string, string]>,
    ]);
    const now = timeReplyMs(time);
    for (const row of waiting) {
      const record = records.get(row.id);
      // A record of an earlier failure (the entry was claimed and ran since) gives no wait.
      const current = record !== undefined && record.deliveryCount === row.deliveryCount;
      row.retry = {
        nextRetryAt: current ? now - row.idleMs + record.delayMs : null,
        delayMs: current ? record.delayMs : null,
        failedBy: record?.consumer ?? null,
        lastError: record?.error ?? null,
      };
    }
  }

  /** XINFO GROUPS: every group of the stream with pending count, last delivered id and lag. */
  async groups(key: string): Promise<GroupInfo[]> {
    nonEmptyStringOption('key', key);
    return parseGroups(await this.run(key, undefined, ['XINFO', 'GROUPS', key]));
  }

  /** XINFO CONSUMERS: the group's consumers with pending counts and idle times. */
  async consumers(key: string, group: string): Promise<ConsumerInfo[]> {
    nonEmptyStringOption('key', key);
    nonEmptyStringOption('group', group);
    return parseConsumers(await this.run(key, group, ['XINFO', 'CONSUMERS', key, group]));
  }

  /** XINFO STREAM: length and first/last entry ids. */
  async stream(key: string): Promise<StreamInfo> {
    nonEmptyStringOption('key', key);
    return parseStreamInfo(key, await this.run(key, undefined, ['XINFO', 'STREAM', key]));
  }

  private async run(key: string, group: string | undefined, [command, ...args]: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.call(command as string, ...args);
    } catch (error) {
      throw this.redactor.error(await translateRedisError(error, key, group, async () => (await this.redis.exists(key)) === 1, () => recordedPartitionCount(this.redis, key)));
    }
  }
}

/** Validates `pendingRange` arguments (naming the bad one) before any command is sent. */
export function resolvePendingRangeOptions(key: string, group: string, options: PendingRangeOptions) {
  nonEmptyStringOption('key', key);
  nonEmptyStringOption('group', group);
  return {
    start: rangeBound('start', options.start, '-'),
    end: rangeBound('end', options.end, '+'),
    count: integerOption('count', options.count, 100, 1, 10_000),
    consumer: options.consumer === undefined ? undefined : nonEmptyStringOption('consumer', options.consumer),
    minIdleMs: options.minIdleTime === undefined ? undefined : durationMillisOption('minIdleTime', options.minIdleTime),
    retryConsumer: options.retryConsumer === false ? (false as const) : nonEmptyStringOption('retryConsumer', options.retryConsumer, DEFAULT_RETRY_CONSUMER),
  };
}

/** `-`, `+`, a stream id, or `(id` (exclusive). */
function rangeBound(option: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (value === '-' || value === '+') return value;
  if (typeof value === 'string' && isStreamId(value.startsWith('(') ? value.slice(1) : value)) return value;
  throw new RedisStreamsOptionError(option, `must be "-", "+", a stream id or "(" followed by a stream id; got ${describe(value)}`);
}
