import { lastValueFrom } from 'rxjs';
import { WireField } from '../codec/wire-format.js';
import { listRecurring, removeDelayed, type HeldCron, type RecurringEntry } from '../delayed/delayed-inspection.js';
import { inDueOrder } from '../delayed/due-order.js';
import { repeatHoldId, type RepeatOptions } from '../delayed/repeat-option.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';
import { checkPattern } from './pattern-check.js';
import type { RedisStreamsClient } from './redis-streams-client.js';
import { RedisStreamsRecord, type RedisStreamsRecordOptions } from './redis-streams-record.js';

/** What `schedule` takes besides the repeat rule: an event's options (no request-only, no IDMP). */
export type ScheduleOptions = Omit<RedisStreamsRecordOptions, 'repeat' | 'idempotencyKey' | 'timeout' | 'replies'>;

/** One recurring entry of a pattern, as `list` and `get` return it. */
export interface ScheduledEntry {
  /** The `repeat.key` it was scheduled under (its hold id is `repeat:<key>`). */
  readonly key: string;
  readonly pattern: string;
  /** The stream key it is held for: the pattern's stream, or with `partitions` its partition's. */
  readonly stream: string;
  /** When it is next added to the stream (ISO-8601, Redis' clock). */
  readonly nextAt: string;
  /** The period in ms of an `every` entry, `null` for a cron entry. */
  readonly every: number | null;
  /** A cron entry's rule and the occurrences listed ahead, `null` for an `every` entry. */
  readonly cron: HeldCron | null;
  /** The payload (the `data` field read as JSON); `undefined` for a raw entry or an unreadable body. */
  readonly data: unknown;
  /** The entry's fields as stored (`[name, value]`), `null` when its body is missing. */
  readonly fields: [string, string][] | null;
}

/**
 * Recurring emits of one client in code (docs/scheduling.md "The scheduler"): `schedule` is the
 * emit of a `RedisStreamsRecord` with `repeat`, `list`, `get` and `remove` read and change the holds
 * of every partition of the pattern, so an entry is found wherever its `partitionKey` put it.
 * Provided by `registerClient({ name, scheduler: true | token })`, or `new RedisStreamsScheduler(client)`.
 * It uses the client's connection and closes with it.
 */
export class RedisStreamsScheduler {
  constructor(private readonly client: RedisStreamsClient) {}

  /**
   * Schedules `data` on `pattern` by `repeat` (`{ every, key }` or `{ cron, timezone?, key }`).
   * Scheduling the same key again replaces the payload and keeps the schedule (safe on every
   * start-up). Resolves with the hold id `repeat:<key>`.
   */
  async schedule(pattern: string, data: unknown, repeat: RepeatOptions, options: ScheduleOptions = {}): Promise<string> {
    checkPattern(pattern);
    checkScheduleOptions(options);
    return (await lastValueFrom(this.client.emit(pattern, new RedisStreamsRecord(data, { ...options, repeat })))) as string;
  }

  /** The recurring entries of `pattern` (all its partitions), soonest first. */
  async list(pattern: string): Promise<ScheduledEntry[]> {
    checkPattern(pattern);
    const redis = await this.client.connect();
    const perStream = await Promise.all(this.client.streamKeysOf(pattern).map((stream) => listRecurring(redis, stream)));
    return perStream
      .flat()
      .sort((a, b) => inDueOrder(dueOf(a), dueOf(b)))
      .map((entry) => scheduledEntry(pattern, entry));
  }

  /** The recurring entry scheduled under `key`, `undefined` when none is. */
  async get(pattern: string, key: string): Promise<ScheduledEntry | undefined> {
    checkKey(key);
    return (await this.list(pattern)).find((entry) => entry.key === key);
  }

  /** Stops the recurring entry `key` (on whichever partition holds it). Resolves with whether one was scheduled. */
  async remove(pattern: string, key: string): Promise<boolean> {
    checkPattern(pattern);
    checkKey(key);
    const redis = await this.client.connect();
    const hold = repeatHoldId(key);
    const removed = await Promise.all(this.client.streamKeysOf(pattern).map((stream) => removeDelayed(redis, stream, [hold])));
    return removed.some((result) => result.removed > 0);
  }
}

/** An entry's place in due order (its `dueAt` is its due ms written out). */
function dueOf(entry: RecurringEntry): { dueMs: number; hold: string } {
  return { dueMs: Date.parse(entry.dueAt), hold: entry.hold };
}

function scheduledEntry(pattern: string, entry: RecurringEntry): ScheduledEntry {
  return {
    key: entry.hold.slice(repeatHoldId('').length),
    pattern,
    stream: entry.stream,
    nextAt: entry.dueAt,
    every: entry.everyMs,
    cron: entry.cron,
    data: payloadOf(entry.fields),
    fields: entry.fields,
  };
}

function payloadOf(fields: [string, string][] | null): unknown {
  const data = fields?.find(([name]) => name === WireField.data)?.[1];
  if (data === undefined) return undefined;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new RedisStreamsOptionError('key', `must be a non-empty string, got ${describe(key)}`);
}

/** The options a scheduled entry cannot take, refused by name (a plain JS caller can pass them). */
function checkScheduleOptions(options: object): void {
  for (const name of ['repeat', 'idempotencyKey', 'timeout', 'replies'] as const) {
    if (name in options && (options as Record<string, unknown>)[name] !== undefined) {
      throw new RedisStreamsOptionError(name, name === 'repeat' ? 'is the third argument of schedule(), not an option' : 'does not apply to a scheduled entry');
    }
  }
}
