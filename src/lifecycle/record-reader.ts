import { Observable } from 'rxjs';
import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { durationMillisOption } from '../duration.js';
import { describe, isStreamId } from '../validation.js';
import { entryIdOption, entryStatus, type EntryState, type EntryStreams } from './entry-status.js';
import { lifecycleNoticesKey, progressKey, resultKey } from './lifecycle-keys.js';
import { decodeRecord, type EntryProgressRecord, type EntryResultRecord } from './lifecycle-records.js';
import type { NoticeListeners, NoticeWaiter } from './notice-listeners.js';
import { followPromotedHold } from './promoted-hold.js';
import { lifecycleScripts } from './scripts/loader.js';

/**
 * The reading side of progress and kept results (client, CLI, dashboard). Waiting is never a poll:
 * a waiter registers with its client's listener of the stream's notices (`{orders}:lifecycle`,
 * one blocking connection per stream, notice-listeners.ts), then reads its record; a notice of its
 * entry wakes it to read again.
 */

export interface ResultOptions {
  /** Wait this long (ms or ISO-8601) for the outcome when none is kept yet; default: answer at once. */
  wait?: number | string;
  /** Delete the result as it is read: exactly one reader gets it (taskiq's `keep_results=False`). Default `false`. */
  consume?: boolean;
}

/** The latest progress of `id` among the pattern's keys, `null` when none is kept. */
export async function readProgress(client: RedisClient, asked: EntryStreams, id: unknown): Promise<EntryProgressRecord | null> {
  const { streams, id: entryId } = await followPromotedHold(client, asked, entryIdOption(id));
  const values = await Promise.all(streams.keys.map((key) => client.getBuffer(progressKey(key, entryId))));
  const index = values.findIndex((value) => value !== null);
  return index === -1 ? null : decodeRecord<EntryProgressRecord>(values[index] as Buffer, progressKey(streams.keys[index] as string, entryId));
}

/** The kept result of `id` (`consume`: deleted as it is read), waiting up to `wait` for it. */
export async function readResult(client: RedisClient, asked: EntryStreams, id: unknown, options: ResultOptions, listeners: NoticeListeners): Promise<EntryResultRecord | null> {
  const askedId = entryIdOption(id);
  const waitMs = options.wait === undefined ? 0 : durationMillisOption('wait', options.wait);
  if (options.consume !== undefined && typeof options.consume !== 'boolean') {
    throw new RedisStreamsOptionError('consume', `must be true or false, got ${describe(options.consume)}`);
  }
  const consume = options.consume === true ? '1' : '0';
  const { streams, id: entryId } = await followPromotedHold(client, asked, askedId);
  const key = await keyOfEntry(client, streams, entryId);
  const read = async (): Promise<EntryResultRecord | null> => {
    const [record] = await lifecycleScripts(client).nrsReadRecordBuffer(resultKey(key, entryId), lifecycleNoticesKey(key), consume);
    return record === null ? null : decodeRecord<EntryResultRecord>(record, resultKey(key, entryId));
  };
  if (waitMs === 0) return read();
  const deadline = Date.now() + waitMs;
  // Woken by a notice of its result, or notices lost (`false`: read again), or the client closed (`true`: over).
  let wake: ((over: boolean) => void) | undefined;
  let woken: boolean | undefined;
  const signal = (over: boolean): void => {
    if (wake !== undefined) wake(over);
    else woken = (woken ?? false) || over;
  };
  const unlisten = await listeners.listen(lifecycleNoticesKey(key), {
    id: entryId,
    notice: (kind) => (kind === 'result' ? signal(false) : undefined),
    resync: () => signal(false),
    ended: () => signal(true),
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const record = await read();
      if (record !== null) return record;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      // Another caller may have consumed it first: then wait on, for nothing or a later delivery's.
      const over =
        woken ??
        (await new Promise<boolean>((resolve) => {
          wake = resolve;
          timer = setTimeout(() => resolve(true), left);
        }));
      clearTimeout(timer);
      wake = undefined;
      woken = undefined;
      if (over) return null;
    }
  } finally {
    clearTimeout(timer);
    unlisten();
  }
}

/**
 * Progress updates of `id` as they are written (the latest kept one first); completes when the
 * entry's delivery settles (its result or settlement notice), or when the client closes. Survives
 * a Redis restart: its listener reads on, and the kept progress is read again.
 */
export function watchProgress(client: RedisClient, asked: EntryStreams, id: unknown, listeners: NoticeListeners): Observable<EntryProgressRecord> {
  const askedId = entryIdOption(id);
  return new Observable<EntryProgressRecord>((subscriber) => {
    let stopped = false;
    let unlisten: (() => void) | undefined;
    // Every read of the watch waits out a Redis restart (a command cut by one is aborted, not resent).
    const whileWatched = <T>(read: () => Promise<T>): Promise<T | null> => readWhileWatched(read, () => stopped);
    const run = async (): Promise<void> => {
      const found = await whileWatched(() => followPromotedHold(client, asked, askedId));
      if (found === null) return;
      const { streams, id: entryId } = found;
      const key = await whileWatched(() => keyOfEntry(client, streams, entryId));
      if (key === null) return;
      let last: EntryProgressRecord | undefined;
      // One read at a time, in order: a later report is never emitted before an earlier one. A read
      // that fails errors the watch (every caller below does): the reads queued behind it, failing
      // with its error, find the watch ended.
      let queue = Promise.resolve();
      const emitLatest = (): Promise<void> =>
        (queue = queue.then(async () => {
          const record = await whileWatched(() => client.getBuffer(progressKey(key, entryId)));
          if (record === null || stopped) return;
          const progress = decodeRecord<EntryProgressRecord>(record, progressKey(key, entryId));
          if (last !== undefined && last.at === progress.at && last.delivery === progress.delivery) return;
          last = progress;
          subscriber.next(progress);
        }));
      // A read that fails (a kept record that does not decode: waiting cannot cure it) errors the watch.
      const report = (): void => void emitLatest().catch((error: unknown) => subscriber.error(error));
      // Its last progress (read again: written before it settled), and done.
      const finish = (): Promise<void> => emitLatest().then(() => subscriber.complete());
      const settle = (): void => void finish().catch((error: unknown) => subscriber.error(error));
      // The latest progress, and done if the entry settled already: at the start its notice may
      // have come before the listener, at a resync (a restart) it may be among the notices lost.
      const catchUp = async (): Promise<void> => {
        await emitLatest();
        if (!stopped && (await whileWatched(() => settledAlready(client, streams.stream, key, entryId)))) await finish();
      };
      const waiter: NoticeWaiter = {
        id: entryId,
        notice: (kind) => (kind === 'progress' ? report() : kind === 'result' || kind === 'settled' ? settle() : undefined),
        resync: () => void catchUp().catch((error: unknown) => subscriber.error(error)),
        ended: () => subscriber.complete(),
      };
      const listening = await whileWatched(() => listeners.listen(lifecycleNoticesKey(key), waiter));
      if (listening === null) return;
      unlisten = listening;
      if (stopped) return unlisten();
      await catchUp();
    };
    run().then(
      () => undefined,
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      stopped = true;
      unlisten?.();
    };
  });
}

/** States after which no notice comes any more: every group is done with the entry, it is a dead letter, or no stream has it. */
const FINAL_STATES: ReadonlySet<EntryState> = new Set(['done', 'dead-lettered', 'gone']);

/** Whether the entry settled already: its kept result says so, else its status (kept results are optional). */
async function settledAlready(client: RedisClient, stream: string, key: string, id: string): Promise<boolean> {
  if ((await client.exists(resultKey(key, id))) === 1) return true;
  return FINAL_STATES.has((await entryStatus(client, { stream, keys: [key] }, id)).state);
}

/** After a failed read (Redis restarting), a watch reads again after this long. */
const RETRY_AFTER_ERROR_MS = 250;

/** `read`, tried again until it answers while the watch lasts (a Redis restart is waited out); `null` once it ended. */
async function readWhileWatched<T>(read: () => Promise<T>, ended: () => boolean): Promise<T | null> {
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (ended()) return null;
      if (error instanceof RedisStreamsOptionError) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_AFTER_ERROR_MS));
    }
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
