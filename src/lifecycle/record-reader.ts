import { Observable } from 'rxjs';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { durationMillisOption } from '../duration.js';
import { describe, isStreamId } from '../validation.js';
import { entryIdOption, type EntryStreams } from './entry-status.js';
import { lifecycleNoticesKey, progressKey, resultKey } from './lifecycle-keys.js';
import { decodeRecord, type EntryProgressRecord, type EntryResultRecord } from './lifecycle-records.js';
import { followPromotedHold } from './promoted-hold.js';
import { lifecycleScripts } from './scripts/loader.js';

/**
 * The reading side of progress and kept results (client, CLI, dashboard). Waiting is never a poll:
 * the record and the newest notice id are read in one step, then a blocking XREAD on the stream's
 * notices (`{orders}:lifecycle`) wakes the waiter when the record is written.
 */

export interface ResultOptions {
  /** Wait this long (ms or ISO-8601) for the outcome when none is kept yet; default: answer at once. */
  wait?: number | string;
  /** Delete the result as it is read: exactly one reader gets it (taskiq's `keep_results=False`). Default `false`. */
  consume?: boolean;
}

/** A connection that may block (its own socket), and how to let it go. */
export interface BlockingConnection {
  readonly client: RedisClient;
  close(): Promise<void>;
}

/** After a failed read (Redis restarting), a watch reads again after this long. */
const RETRY_AFTER_ERROR_MS = 250;
/** Longest single block of a watch: it re-reads its notices at least this often (a restart that lost them is found). */
const WATCH_BLOCK_MS = 5_000;

/** The latest progress of `id` among the pattern's keys, `null` when none is kept. */
export async function readProgress(client: RedisClient, asked: EntryStreams, id: unknown): Promise<EntryProgressRecord | null> {
  const { streams, id: entryId } = await followPromotedHold(client, asked, entryIdOption(id));
  const values = await Promise.all(streams.keys.map((key) => client.getBuffer(progressKey(key, entryId))));
  const found = values.find((value) => value !== null);
  return found === undefined || found === null ? null : decodeRecord<EntryProgressRecord>(found);
}

/** The kept result of `id` (`consume`: deleted as it is read), waiting up to `wait` for it. */
export async function readResult(
  client: RedisClient,
  asked: EntryStreams,
  id: unknown,
  options: ResultOptions,
  openBlocking: () => BlockingConnection,
): Promise<EntryResultRecord | null> {
  const askedId = entryIdOption(id);
  const waitMs = options.wait === undefined ? 0 : durationMillisOption('wait', options.wait);
  if (options.consume !== undefined && typeof options.consume !== 'boolean') {
    throw new RedisStreamsOptionError('consume', `must be true or false, got ${describe(options.consume)}`);
  }
  const consume = options.consume === true ? '1' : '0';
  const { streams, id: entryId } = await followPromotedHold(client, asked, askedId);
  const key = await keyOfEntry(client, streams, entryId);
  const read = async (): Promise<{ record: EntryResultRecord | null; last: string }> => {
    const [record, last] = await lifecycleScripts(client).nrsReadRecordBuffer(resultKey(key, entryId), lifecycleNoticesKey(key), consume);
    return { record: record === null ? null : decodeRecord<EntryResultRecord>(record), last: String(last) };
  };
  const first = await read();
  if (first.record !== null || waitMs === 0) return first.record;
  const deadline = Date.now() + waitMs;
  const blocking = openBlocking();
  try {
    let from = first.last;
    for (let left = waitMs; left > 0; left = deadline - Date.now()) {
      const notices = await readNotices(blocking.client, lifecycleNoticesKey(key), from, left);
      if (notices === null) break;
      from = notices.last;
      if (!notices.ids.some((notice) => notice.id === entryId && notice.kind === 'result')) continue;
      // Another caller may have consumed it first: then wait on, for nothing or a later delivery's.
      const now = await read();
      if (now.record !== null) return now.record;
    }
    return null;
  } finally {
    await blocking.close();
  }
}

/**
 * Progress updates of `id` as they are written (the latest kept one first); completes when the
 * entry's delivery settles (its result or settlement notice). Survives a Redis restart: a failed
 * read is tried again, and the kept progress re-read, while someone subscribes.
 */
export function watchProgress(client: RedisClient, asked: EntryStreams, id: unknown, openBlocking: () => BlockingConnection): Observable<EntryProgressRecord> {
  const askedId = entryIdOption(id);
  return new Observable<EntryProgressRecord>((subscriber) => {
    let stopped = false;
    let blocking: BlockingConnection | undefined;
    const run = async (): Promise<void> => {
      const { streams, id: entryId } = await followPromotedHold(client, asked, askedId);
      const key = await keyOfEntry(client, streams, entryId);
      const notices = lifecycleNoticesKey(key);
      let last: EntryProgressRecord | null | undefined;
      let from: string | undefined;
      const emitLatest = async (): Promise<void> => {
        const [record, newest] = await lifecycleScripts(client).nrsReadRecordBuffer(progressKey(key, entryId), notices, '0');
        from ??= String(newest);
        if (record === null) return;
        const progress = decodeRecord<EntryProgressRecord>(record);
        if (last !== undefined && last !== null && last.at === progress.at && last.delivery === progress.delivery) return;
        last = progress;
        subscriber.next(progress);
      };
      blocking = openBlocking();
      await emitLatest();
      // Settled before the watch began: its last progress, and done.
      if ((await client.exists(resultKey(key, entryId))) === 1) {
        subscriber.complete();
        return;
      }
      while (!stopped) {
        try {
          if (from === undefined) await emitLatest();
          const read = await readNotices(blocking.client, notices, from as string, WATCH_BLOCK_MS);
          if (read === null) continue;
          from = read.last;
          const mine = read.ids.filter((notice) => notice.id === entryId);
          if (mine.some((notice) => notice.kind === 'progress')) await emitLatest();
          if (mine.some((notice) => notice.kind === 'result' || notice.kind === 'settled')) {
            subscriber.complete();
            return;
          }
        } catch (error) {
          if (stopped) return;
          if (error instanceof RedisStreamsOptionError) throw error;
          await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
          // Notices may be gone with a restart (no persistence): read the kept progress again.
          if (!(await stillThere(client, notices, from))) from = undefined;
        }
      }
    };
    run().then(
      () => undefined,
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      stopped = true;
      void blocking?.close();
    };
  });
}

/** Whether the notice `from` still exists (a restart without persistence lost the notices). */
async function stillThere(client: RedisClient, notices: string, from: string | undefined): Promise<boolean> {
  if (from === undefined || from === '0-0') return false;
  try {
    return (await client.xrange(notices, from, from)).length === 1;
  } catch {
    return false;
  }
}

/** The stream key of a pattern that the entry is (or was) in: the only one, else the one whose stream or records have it. */
async function keyOfEntry(client: RedisClient, streams: EntryStreams, id: string): Promise<string> {
  if (streams.keys.length === 1) return streams.keys[0] as string;
  const found = await Promise.all(
    streams.keys.map(async (key) => {
      const [records, inStream] = await Promise.all([
        client.exists(resultKey(key, id), progressKey(key, id)),
        isStreamId(id) ? client.xrange(key, id, id).then((rows) => rows.length) : Promise.resolve(0),
      ]);
      return records + inStream > 0;
    }),
  );
  const index = found.indexOf(true);
  if (index === -1) {
    throw new RedisStreamsOptionError('entryId', `entry ${id} is in none of the streams of "${streams.stream}" (${streams.keys.join(', ')}), and no record of it is kept`);
  }
  return streams.keys[index] as string;
}

interface NoticeRead {
  readonly last: string;
  readonly ids: { id: string; kind: string }[];
}

/** One blocking read of the notices after `from`; `null` when none came within `blockMs`. */
async function readNotices(client: RedisClient, notices: string, from: string, blockMs: number): Promise<NoticeRead | null> {
  const reply = (await client.xread('BLOCK', Math.max(1, Math.ceil(blockMs)), 'STREAMS', notices, from)) as [string, [string, string[]][]][] | null;
  if (reply === null || reply.length === 0) return null;
  const rows = (reply[0] as [string, [string, string[]][]])[1];
  if (rows.length === 0) return null;
  const ids = rows.map(([, fields]) => ({ id: fieldOf(fields, 'id'), kind: fieldOf(fields, 'kind') }));
  return { last: (rows[rows.length - 1] as [string, string[]])[0], ids };
}

function fieldOf(fields: readonly string[], name: string): string {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1] as string;
  return '';
}
