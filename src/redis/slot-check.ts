import { RedisStreamsOptionError } from '../errors.js';
import { hashSlotOf } from './keys.js';

/** Keys one Lua script touches together: they must share a hash slot on Redis Cluster. */
export interface KeysTouchedTogether {
  /** The option that chose `key` (named in the error). */
  readonly option: string;
  readonly stream: string;
  readonly key: string;
  /** What the script does with both, for the message. */
  readonly purpose: string;
}

/**
 * Checks, before anything is read, that every companion key shares its stream's hash slot. On a
 * Cluster a mismatch would fail at the first script call with a raw CROSSSLOT: it is a
 * `RedisStreamsOptionError` naming the option instead. Standalone Redis runs such scripts fine, so
 * there it is a warning (the same configuration would break on a Cluster).
 */
export function checkSameSlot(keys: readonly KeysTouchedTogether[], cluster: boolean, warn: (message: string) => void): void {
  for (const { option, stream, key, purpose } of keys) {
    const streamSlot = hashSlotOf(stream);
    const keySlot = hashSlotOf(key);
    if (streamSlot === keySlot) continue;
    const message =
      `"${key}" (hash slot ${keySlot}) is not in the hash slot of stream "${stream}" (${streamSlot}); ${purpose} in one script, ` +
      `which Redis Cluster refuses across slots (CROSSSLOT). Give both keys the same hash tag, e.g. "{${stream}}:dead" (see deadLetterKey())`;
    if (cluster) throw new RedisStreamsOptionError(option, message);
    warn(`${option}: ${message}; this works on standalone Redis but would fail on a Cluster`);
  }
}

/** Each stream with its dead-letter stream (moved by one script). */
export function deadLetterKeysOf(streams: Iterable<string>, keyOf: (stream: string) => string, option: string): KeysTouchedTogether[] {
  return [...new Set(streams)].map((stream) => ({ option, stream, key: keyOf(stream), purpose: 'dead letters are moved from one to the other' }));
}
