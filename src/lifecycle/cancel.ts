import { delayedKeys } from '../delayed/delayed-keys.js';
import { RedisStreamsOptionError } from '../errors.js';
import { deadLetterKeyOption, type DeadLetterKeySetting } from '../recovery/dead-letter-key-option.js';
import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey, hashSlotOf } from '../redis/keys.js';
import { describe, isStreamId } from '../validation.js';
import { entryIdOption, type EntryStreams } from './entry-status.js';
import { cancelMarkerKey } from './lifecycle-keys.js';
import { followPromotedHold } from './promoted-hold.js';
import { lifecycleScripts } from './scripts/loader.js';

/** What a cancel found and did (docs/lifecycle.md). */
export interface CancelOutcome {
  readonly stream: string;
  /** The id asked about (a stream id, or a hold id). */
  readonly id: string;
  /** Asked by the hold id of a one-off delayed entry already promoted: the stream id of the entry it became, which was cancelled; else `null`. */
  readonly promotedTo: string | null;
  /** Whether the entry was taken out (and dead-lettered with reason `cancelled`). */
  readonly cancelled: boolean;
  /**
   * Where it was: `held`, `waiting`, `pending` (some group had it pending: a worker may be running
   * it, and its `ctx.signal` aborts at its next lease renewal), or `done` / `gone` (nothing changed).
   */
  readonly previous: 'held' | 'waiting' | 'pending' | 'done' | 'gone';
  /** The stream key it was in (a partition or lane), `null` when not found. */
  readonly key: string | null;
  /** Its dead letter: `{ key, id }`, `null` when nothing was cancelled. */
  readonly deadLetter: { readonly key: string; readonly id: string } | null;
}

export interface CancelOptions {
  /** The dead-letter stream of a stream key, as the servers' `recovery.deadLetterKey` (a function or a `%s` template). Default `{<stream>}:dead`. It must share the stream's hash slot. */
  deadLetterKey?: DeadLetterKeySetting;
}

/** How long a running entry's cancel reason is kept for its worker (a lease renewal comes well within). */
const MARKER_TTL_MS = 60 * 60 * 1000;
const MAX_REASON_LENGTH = 4096;

/**
 * Cancels entry `id` of a pattern: one script per key (held, waiting or pending there: dead-lettered
 * with reason `cancelled` and taken out, in one step), trying the pattern's keys in turn until one
 * had it. Never loses it: the dead letter keeps its fields (redrive brings it back).
 */
export async function cancelEntry(client: RedisClient, asked: EntryStreams, id: unknown, reason: unknown = 'cancelled by an operator', options: CancelOptions = {}): Promise<CancelOutcome> {
  const askedId = entryIdOption(id);
  if (typeof reason !== 'string' || reason === '' || reason.length > MAX_REASON_LENGTH) {
    throw new RedisStreamsOptionError('reason', `must be a non-empty string of at most ${MAX_REASON_LENGTH} characters, got ${describe(reason)}`);
  }
  const deadOf = deadLetterKeyOption('deadLetterKey', options.deadLetterKey) ?? deadLetterKey;
  // A promoted hold is cancelled as the entry it became (a hold still held, by its hold id).
  const { streams, id: entryId } = await followPromotedHold(client, asked, askedId);
  const promotedTo = entryId === askedId ? null : entryId;
  let last: CancelOutcome = { stream: streams.stream, id: askedId, promotedTo, cancelled: false, previous: 'gone', key: null, deadLetter: null };
  for (const key of streams.keys) {
    const dead = deadOf(key);
    if (hashSlotOf(dead) !== hashSlotOf(key)) {
      throw new RedisStreamsOptionError('deadLetterKey', `"${dead}" is not in the hash slot of "${key}": a cancel moves the entry in one script, so both must share it (a hash tag: "{${key}}:dead")`);
    }
    const { schedule, bodies, recurring } = delayedKeys(key);
    const [previous, letter] = await lifecycleScripts(client).nrsCancel(
      key, dead, schedule, bodies, recurring, cancelMarkerKey(key, entryId), entryId, reason, isStreamId(entryId) ? '1' : '0', MARKER_TTL_MS,
    );
    const outcome = String(previous) as CancelOutcome['previous'];
    if (outcome === 'gone') continue;
    last = { stream: streams.stream, id: askedId, promotedTo, cancelled: outcome !== 'done', previous: outcome, key, deadLetter: outcome === 'done' ? null : { key: dead, id: String(letter) } };
    if (last.cancelled) return last;
  }
  return last;
}

/** Why a running entry was cancelled (its worker's lease renewal found it gone), `undefined` when it was not. */
export async function cancelReasonOf(client: RedisClient, stream: string, id: string): Promise<string | undefined> {
  return (await client.get(cancelMarkerKey(stream, id))) ?? undefined;
}
