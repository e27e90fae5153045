import { companionKey } from '../redis/keys.js';

/**
 * The keys that hold the delayed entries of `stream`, both in its hash slot (so one script
 * may touch them and the stream on Redis Cluster): `{orders}:delayed`, a sorted set of hold ids
 * scored by their due time (ms of Redis' clock), and `{orders}:delayed-bodies`, a hash of hold id
 * to the entry's packed fields and XADD options, and `{orders}:delayed-recurring`, a set of the
 * hold ids of its recurring entries (to list them without reading every hold). Once promoted, a
 * one-off hold's new entry id is kept for {@link PROMOTED_KEEP_MS} in `{orders}:delayed-promoted`
 * (hash: hold id -> entry id) and `{orders}:delayed-promoted-at` (sorted set: hold id -> when),
 * so a caller who knows only the hold id finds its entry (docs/lifecycle.md).
 */
export interface DelayedKeys {
  readonly schedule: string;
  readonly bodies: string;
  readonly recurring: string;
  readonly promoted: string;
  readonly promotedAt: string;
}

/** How long a promoted hold's entry id is kept (then its hold id answers `gone`). */
export const PROMOTED_KEEP_MS = 24 * 60 * 60 * 1000;

export function delayedKeys(stream: string): DelayedKeys {
  return {
    schedule: companionKey(stream, 'delayed'),
    bodies: companionKey(stream, 'delayed-bodies'),
    recurring: companionKey(stream, 'delayed-recurring'),
    promoted: companionKey(stream, 'delayed-promoted'),
    promotedAt: companionKey(stream, 'delayed-promoted-at'),
  };
}
