import { RedisStreamsOptionError } from '../errors.js';
import { hashSlotOf } from '../redis/keys.js';
import { describe } from '../validation.js';

/**
 * Priority lanes: one pattern read from one stream per priority, highest first. Producer and
 * consumer both name the lanes' keys through this file.
 *
 * Lane `high` of stream `orders` is `orders:high`. Lanes are given highest first
 * (`['high', 'normal', 'low']`); an entry without a priority goes to the default lane, the middle
 * one (`lanes[floor(n / 2)]`: `normal` of three, `low` of `['high', 'low']`).
 */

/** Most lanes a pattern may have: every lane is one more stream in each read. */
export const MAX_PRIORITIES = 10;

/** Letters, digits, `_`, `-` and `.`: no `:` (key separator), no braces (hash tags), no glob characters (ACL rules). */
const LANE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** `p0`, `p12`: the names of partition keys (partition-keys.ts); a lane named so would read like a partition. */
const PARTITION_LIKE = /^p\d+$/;

/** The stream key of lane `priority` of `stream`. */
export function priorityStreamKey(stream: string, priority: string): string {
  return `${stream}:${priority}`;
}

/** Every lane's stream key of `stream`, highest first. */
export function priorityStreamKeys(stream: string, lanes: readonly string[]): string[] {
  return lanes.map((lane) => priorityStreamKey(stream, lane));
}

/** The lane a record without a priority goes to: the middle one (the lower of the two middle ones). */
export function defaultPriorityOf(lanes: readonly string[]): string {
  return lanes[Math.floor(lanes.length / 2)] as string;
}

/**
 * A lane list: 1 to {@link MAX_PRIORITIES} distinct names, highest first, each 1 to 64 letters,
 * digits, `_`, `-` or `.` and not a partition's name (`p0`). `undefined` stays `undefined` (no lanes).
 */
export function priorityLanesOption(option: string, value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    throw new RedisStreamsOptionError(option, `must be an array of 1 to ${MAX_PRIORITIES} lane names, highest first, got ${describe(value)}`);
  }
  if (value.length === 0) throw new RedisStreamsOptionError(option, 'must list at least one lane (lane names, highest first), got an empty array');
  if (value.length > MAX_PRIORITIES) {
    throw new RedisStreamsOptionError(option, `lists ${value.length} lanes, at most ${MAX_PRIORITIES} are allowed (every lane is one more stream in each read)`);
  }
  const seen = new Set<string>();
  for (const lane of value as unknown[]) {
    if (typeof lane !== 'string' || !LANE_NAME.test(lane)) {
      throw new RedisStreamsOptionError(
        option,
        `lane names must be 1 to 64 letters, digits, "_", "-" or "." (each names the stream "<stream>:<lane>"), got ${describe(lane)}`,
      );
    }
    if (PARTITION_LIKE.test(lane)) {
      throw new RedisStreamsOptionError(option, `lane "${lane}" would be named like a partition ("<stream>:p0" …); choose another name`);
    }
    if (seen.has(lane)) throw new RedisStreamsOptionError(option, `lane "${lane}" is given twice`);
    seen.add(lane);
  }
  return Object.freeze([...(value as string[])]);
}

/**
 * On a Cluster one read names keys of one hash slot only, and a pattern's lanes are read together:
 * their keys must share a slot, which a hash tag in the pattern gives (`{orders}` → `{orders}:high`).
 */
export function checkLanesShareSlot(option: string, stream: string, lanes: readonly string[]): void {
  const slots = new Set(priorityStreamKeys(stream, lanes).map(hashSlotOf));
  if (slots.size <= 1) return;
  throw new RedisStreamsOptionError(
    option,
    `the lanes of "${stream}" hash to ${slots.size} slots of the Cluster, but one read takes them together: ` +
      `put a hash tag in the pattern ("{${stream}}" gives "{${stream}}:${lanes[0] as string}" …)`,
  );
}
