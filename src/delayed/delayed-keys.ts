import { companionKey } from '../redis/keys.js';

/**
 * The keys that hold the delayed entries of `stream`, both in its hash slot (so one script
 * may touch them and the stream on Redis Cluster): `{orders}:delayed`, a sorted set of hold ids
 * scored by their due time (ms of Redis' clock), and `{orders}:delayed-bodies`, a hash of hold id
 * to the entry's packed fields and XADD options, and `{orders}:delayed-recurring`, a set of the
 * hold ids of its recurring entries (to list them without reading every hold).
 */
export interface DelayedKeys {
  readonly schedule: string;
  readonly bodies: string;
  readonly recurring: string;
}

export function delayedKeys(stream: string): DelayedKeys {
  return { schedule: companionKey(stream, 'delayed'), bodies: companionKey(stream, 'delayed-bodies'), recurring: companionKey(stream, 'delayed-recurring') };
}
