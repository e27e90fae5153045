import { DEFAULT_RETRY_CONSUMER } from '../claim/retry-record.js';
import { delayedKeys } from '../delayed/delayed-keys.js';
import { durationMillisOption } from '../duration.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey } from '../redis/keys.js';
import { deadLetterKeyOption, type DeadLetterKeySetting } from '../recovery/dead-letter-key-option.js';
import { describe, integerOption, isStreamId, nonEmptyStringOption } from '../validation.js';
import { progressKey, resultKey } from './lifecycle-keys.js';
import { decodeRecord, type EntryProgressRecord, type EntryResultRecord } from './lifecycle-records.js';
import { lifecycleScripts, type DeadLetterRow, type GroupRow } from './scripts/loader.js';

/**
 * What became of one entry, from what Redis shows (docs/lifecycle.md): the one place that
 * classifies it. The client, the CLI and the dashboard ask through `entryStatus`.
 */
export type EntryState = 'held' | 'waiting' | 'pending' | 'running' | 'failed' | 'done' | 'dead-lettered' | 'gone';

/** A dead letter of the entry (the dead-letter stream's entry and its header). */
export interface EntryDeadLetter {
  /** The dead-letter stream's key. */
  readonly key: string;
  /** The dead letter's id there (what `dlq redrive` takes). */
  readonly id: string;
  readonly reason: string;
  readonly error: string;
  readonly deliveries: number;
  /** When it was moved (ISO-8601, Redis' clock). */
  readonly at: string;
}

/** The entry as one consumer group sees it. */
export interface GroupEntryStatus {
  readonly group: string;
  readonly state: Exclude<EntryState, 'held'>;
  /** `pending` / `running`: the consumer holding it; else `null`. */
  readonly consumer: string | null;
  /** `pending` / `running`: deliveries so far (Redis' count); `dead-lettered`: when moved; else `null`. */
  readonly deliveries: number | null;
  /** `pending` / `running`: ms since it was delivered or its lease was last renewed; else `null`. */
  readonly idleMs: number | null;
  /** `dead-lettered`: the dead letter; else `null`. */
  readonly deadLetter: EntryDeadLetter | null;
}

export interface EntryStatus {
  /** The stream (or pattern's stream) asked about. */
  readonly stream: string;
  /** The id asked about (a stream id, or a hold id). */
  readonly id: string;
  /** Asked by the hold id of a one-off delayed entry already promoted: the stream id of the entry it became (the rest is that entry's); else `null`. */
  readonly promotedTo: string | null;
  /**
   * One state for the entry: `held` or `gone` when no stream has it; with one group that
   * group's; with several the least advanced one (waiting, pending, running before settled; of
   * settled groups, dead-lettered before done); `waiting` in a stream without groups.
   */
  readonly state: EntryState;
  /** The stream key the entry is (or was) in: a partition or lane of a pattern, else the stream; `null` when gone. */
  readonly key: string | null;
  /** `held`: when it is due (ISO-8601, Redis' clock); else `null`. */
  readonly dueAt: string | null;
  /** One row per consumer group of `key` (only `group` when one was asked for), by name. */
  readonly groups: readonly GroupEntryStatus[];
  /** `false` when the dead-letter search stopped at its bound (`deadLetterScan`) before the end: a `done` may be a dead letter further on. */
  readonly deadLettersSearched: boolean;
  /** Its latest `ctx.progress()` value while kept, else `null`. */
  readonly progress: EntryProgressRecord | null;
  /** Its kept result (`keepResults`) while kept, else `null`. */
  readonly result: EntryResultRecord | null;
}

export interface EntryStatusOptions {
  /** Only this consumer group (default: every group of the stream). */
  group?: string;
  /**
   * A pending entry idle less than this is `running` (its worker renews its lease: recovery's
   * `leaseInterval`, a third of `minIdleTime` by default); idle this long, `pending` (nobody
   * renews it: its worker is busy without leases, gone, or it waits to be claimed). Default 30 s,
   * the default `minIdleTime`. Milliseconds or ISO-8601.
   */
  leaseWindow?: number | string;
  /** The consumer that failed entries wait on for their retry (recovery's `retryConsumer`): `pending`, never `running`. Default `retry`. */
  retryConsumer?: string;
  /** The dead-letter stream of a stream key, as the server's `recovery.deadLetterKey` names it (a function or a `%s` template). Default `{<stream>}:dead`. */
  deadLetterKey?: DeadLetterKeySetting;
  /** At most this many dead letters are read looking for the entry (from its time on). Default 10 000. */
  deadLetterScan?: number;
}

/** Where one pattern's entries may be: its stream, or its partitions' or lanes' streams. */
export interface EntryStreams {
  /** The pattern's stream, as reported back. */
  readonly stream: string;
  /** Every key to look in (the stream itself, or each partition or lane). */
  readonly keys: readonly string[];
}

const DEFAULT_LEASE_WINDOW_MS = 30_000;
const DEFAULT_DEAD_LETTER_SCAN = 10_000;
/** Least advanced first: the order in which one state stands for several groups. */
const STATE_ORDER: readonly EntryState[] = ['waiting', 'pending', 'running', 'failed', 'dead-lettered', 'done', 'gone'];
/** Hold ids are UUIDs or `repeat:` keys: text of any kind, bounded so a typo is not sent as a huge key. */
const MAX_ID_LENGTH = 1024;

interface ResolvedOptions {
  readonly group: string;
  readonly leaseWindowMs: number;
  readonly retryConsumer: string;
  readonly deadLetterKey: (stream: string) => string;
  readonly deadLetterScan: number;
}

interface KeyReading {
  readonly key: string;
  readonly dueMs: number;
  /** The entry id a promoted hold became ('' when the id is no such hold). */
  readonly promotedTo: string;
  readonly inStream: boolean;
  readonly groups: readonly GroupRow[];
}

/**
 * The status of entry `id` (a stream id, or the hold id a delayed emit returned) among `streams`:
 * one script call per key (each reads its stream, groups and delayed schedule in one step), then,
 * only when some group is done with it or no key has it, a bounded search of the dead letters.
 */
export async function entryStatus(client: RedisClient, streams: EntryStreams, id: unknown, options: EntryStatusOptions = {}): Promise<EntryStatus> {
  const entryId = entryIdOption(id);
  const resolved = resolveOptions(options);
  const readings = await Promise.all(streams.keys.map((key) => readKey(client, key, entryId, resolved.group)));
  const held = readings.find((reading) => reading.dueMs >= 0);
  if (held !== undefined) {
    return { stream: streams.stream, id: entryId, promotedTo: null, state: 'held', key: held.key, dueAt: new Date(held.dueMs).toISOString(), groups: [], deadLettersSearched: true, progress: null, result: null };
  }
  // A promoted hold: its key's reading is its entry's (entry-status.lua followed it).
  const promoted = readings.find((reading) => reading.promotedTo !== '');
  if (promoted !== undefined) {
    const status = await statusOfEntry(client, { stream: streams.stream, keys: [promoted.key] }, promoted.promotedTo, [promoted], resolved);
    return { ...status, id: entryId, promotedTo: promoted.promotedTo };
  }
  return statusOfEntry(client, streams, entryId, readings, resolved);
}

/** The status of an entry that is not held, from its keys' readings. */
async function statusOfEntry(client: RedisClient, streams: EntryStreams, entryId: string, readings: readonly KeyReading[], resolved: ResolvedOptions): Promise<EntryStatus> {
  // Ids are per stream: on a pattern of several keys, the one that has it (or still has it pending).
  const reading = readings.find((one) => one.inStream || one.groups.some(isPendingRow));
  if (reading === undefined) return findGone(client, streams, entryId, resolved);
  const settled = reading.groups.filter((row) => !isPendingRow(row) && !isAfter(entryId, row[1]));
  const [search, records] = await Promise.all([
    settled.length > 0 || !reading.inStream ? findDeadLetters(client, reading.key, entryId, resolved) : { complete: true, letters: [] },
    readRecords(client, reading.key, entryId),
  ]);
  const groups = reading.groups.map((row) => groupStatus(row, entryId, reading.inStream, search.letters, resolved, records.result));
  return {
    ...records,
    stream: streams.stream,
    id: entryId,
    promotedTo: null,
    state: summaryState(groups, reading.inStream),
    key: reading.key,
    dueAt: null,
    groups,
    deadLettersSearched: search.complete,
  };
}

/** No key has it in its stream or pending: a dead letter (moved and deleted), else gone. */
async function findGone(client: RedisClient, streams: EntryStreams, id: string, options: ResolvedOptions): Promise<EntryStatus> {
  if (!isStreamId(id)) return { stream: streams.stream, id, promotedTo: null, state: 'gone', key: null, dueAt: null, groups: [], deadLettersSearched: true, progress: null, result: null };
  const searches = await Promise.all(streams.keys.map(async (key) => ({ key, ...(await findDeadLetters(client, key, id, options)) })));
  const found = searches.find((search) => search.letters.length > 0);
  const complete = searches.every((search) => search.complete);
  if (found === undefined) return { stream: streams.stream, id, promotedTo: null, state: 'gone', key: null, dueAt: null, groups: [], deadLettersSearched: complete, progress: null, result: null };
  const groups = found.letters.filter((letter) => options.group === '' || letter.group === options.group).map((letter) => deadLetteredGroup(letter.group, letter.deadLetter));
  const state = groups.length > 0 ? 'dead-lettered' : 'gone';
  return { stream: streams.stream, id, promotedTo: null, state, key: found.key, dueAt: null, groups: sortedByGroup(groups), deadLettersSearched: complete, ...(await readRecords(client, found.key, id)) };
}

async function readKey(client: RedisClient, key: string, id: string, group: string): Promise<KeyReading> {
  const { schedule, promoted } = delayedKeys(key);
  const [dueMs, inStream, , promotedTo, ...groups] = await lifecycleScripts(client).nrsEntryStatus(key, schedule, promoted, id, isStreamId(id) ? '1' : '0', group);
  return { key, dueMs: Number(dueMs), promotedTo: String(promotedTo), inStream: Number(inStream) === 1, groups: groups.map(groupRowOf) };
}

interface GroupDeadLetter {
  readonly group: string;
  readonly deadLetter: EntryDeadLetter;
}

async function findDeadLetters(client: RedisClient, key: string, id: string, options: ResolvedOptions): Promise<{ complete: boolean; letters: GroupDeadLetter[] }> {
  const deadLetters = options.deadLetterKey(key);
  const [complete, ...rows] = await lifecycleScripts(client).nrsFindDeadLetter(deadLetters, key, id, options.deadLetterScan);
  return { complete: Number(complete) === 1, letters: rows.map((row) => deadLetterOf(deadLetters, row)) };
}

function deadLetterOf(key: string, row: DeadLetterRow): GroupDeadLetter {
  const [id, group, , deliveries, reason, error, at] = row.map(String) as DeadLetterRow;
  return { group, deadLetter: { key, id, reason, error, deliveries: Number(deliveries), at: new Date(Number(at)).toISOString() } };
}

/** The entry's progress and kept result (two GETs of its stream's slot). */
async function readRecords(client: RedisClient, key: string, id: string): Promise<{ progress: EntryProgressRecord | null; result: EntryResultRecord | null }> {
  const [progress, result] = await Promise.all([client.getBuffer(progressKey(key, id)), client.getBuffer(resultKey(key, id))]);
  return { progress: progress === null ? null : decodeRecord(progress, progressKey(key, id)), result: result === null ? null : decodeRecord(result, resultKey(key, id)) };
}

/**
 * One group's state: pending (running while its lease is fresh; failed when its kept result is
 * its last delivery's error and nobody runs it), waiting past the group's last-delivered id, else settled.
 */
function groupStatus(row: GroupRow, id: string, inStream: boolean, letters: readonly GroupDeadLetter[], options: ResolvedOptions, result: EntryResultRecord | null): GroupEntryStatus {
  const [group, lastDelivered, consumer, idleMs, deliveries] = row;
  if (isPendingRow(row)) {
    const running = consumer !== options.retryConsumer && idleMs < options.leaseWindowMs;
    const failed = result?.state === 'failed' && result.delivery === deliveries;
    return { group, state: failed && !running ? 'failed' : running ? 'running' : 'pending', consumer, deliveries, idleMs, deadLetter: null };
  }
  const letter = letters.find((one) => one.group === group);
  if (letter !== undefined) return deadLetteredGroup(group, letter.deadLetter);
  const state = !inStream ? 'gone' : isAfter(id, lastDelivered) ? 'waiting' : 'done';
  return { group, state, consumer: null, deliveries: null, idleMs: null, deadLetter: null };
}

function deadLetteredGroup(group: string, deadLetter: EntryDeadLetter): GroupEntryStatus {
  return { group, state: 'dead-lettered', consumer: null, deliveries: deadLetter.deliveries, idleMs: null, deadLetter };
}

function summaryState(groups: readonly GroupEntryStatus[], inStream: boolean): EntryState {
  if (groups.length === 0) return inStream ? 'waiting' : 'gone';
  let best = STATE_ORDER.length;
  for (const { state } of groups) best = Math.min(best, STATE_ORDER.indexOf(state));
  return STATE_ORDER[best] as EntryState;
}

function isPendingRow(row: GroupRow): boolean {
  return row[2] !== '';
}

function groupRowOf(raw: GroupRow): GroupRow {
  const [group, lastDelivered, consumer, idle, deliveries] = raw;
  return [String(group), String(lastDelivered), String(consumer), Number(idle), Number(deliveries)];
}

function sortedByGroup(groups: GroupEntryStatus[]): GroupEntryStatus[] {
  return groups.sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0));
}

/** Whether stream id `id` comes after `other` (both `ms-seq`). */
export function isAfter(id: string, other: string): boolean {
  const [ms, seq] = id.split('-').map(BigInt) as [bigint, bigint];
  const [otherMs, otherSeq] = other.split('-').map(BigInt) as [bigint, bigint];
  return ms > otherMs || (ms === otherMs && seq > otherSeq);
}

/** An entry id: a stream id (`1700000000000-0`) or a hold id, non-empty text up to 1024 characters. */
export function entryIdOption(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_LENGTH) {
    throw new RedisStreamsOptionError('entryId', `must be a stream id ("1700000000000-0") or the hold id a delayed emit returned, got ${describe(value)}`);
  }
  return value;
}

function resolveOptions(options: EntryStatusOptions): ResolvedOptions {
  return {
    group: options.group === undefined ? '' : nonEmptyStringOption('group', options.group),
    leaseWindowMs: options.leaseWindow === undefined ? DEFAULT_LEASE_WINDOW_MS : durationMillisOption('leaseWindow', options.leaseWindow),
    retryConsumer: nonEmptyStringOption('retryConsumer', options.retryConsumer, DEFAULT_RETRY_CONSUMER),
    deadLetterKey: deadLetterKeyOption('deadLetterKey', options.deadLetterKey) ?? deadLetterKey,
    deadLetterScan: integerOption('deadLetterScan', options.deadLetterScan, DEFAULT_DEAD_LETTER_SCAN, 1, 1_000_000),
  };
}
