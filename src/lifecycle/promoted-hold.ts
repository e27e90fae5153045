import { delayedKeys } from '../delayed/delayed-keys.js';
import type { RedisClient } from '../redis/connection.js';
import { isStreamId } from '../validation.js';
import type { EntryStreams } from './entry-status.js';

/** An entry to read or cancel: its id and the keys to look in. */
export interface EntryRef {
  readonly streams: EntryStreams;
  readonly id: string;
}

/**
 * A one-off delayed entry's hold id, once promoted, stands for the entry it became (its new stream
 * id, kept by promote.lua for `PROMOTED_KEEP_MS`): that id, in the key it was promoted into. Any
 * other id (a stream id, a hold still held or not remembered) is left as it is.
 */
export async function followPromotedHold(client: RedisClient, streams: EntryStreams, id: string): Promise<EntryRef> {
  if (isStreamId(id)) return { streams, id };
  const found = await Promise.all(streams.keys.map((key) => client.hget(delayedKeys(key).promoted, id)));
  const index = found.findIndex((entry) => entry !== null);
  if (index === -1) return { streams, id };
  return { streams: { stream: streams.stream, keys: [streams.keys[index] as string] }, id: found[index] as string };
}
