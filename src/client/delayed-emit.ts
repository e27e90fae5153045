import { RedisStreamsOptionError } from '../errors.js';
import { firstOccurrences } from '../delayed/cron-rule.js';
import { holdEntry, holdHead, type Recurrence } from '../delayed/hold.js';
import { resolveRepeat } from '../delayed/repeat-option.js';
import type { DeliveryTime } from '../delayed/delivery-time.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import { trimmingUnsupported } from './capability-needs.js';
import type { XAddArgs } from './producer-connection.js';
import type { RedisStreamsRecordOptions } from './redis-streams-record.js';
import type { CompiledTrimming } from './trimming.js';

/**
 * The hold of a delayed emit (docs/scheduling.md): instead of the XADD, the start of a hold
 * script's arguments (hold id, due time, the XADD the promotion will run: NOMKSTREAM and the
 * trimming of this emit); the writer appends the fields as it would to the XADD.
 */
export function delayedHoldArgs(
  holdId: string,
  time: DeliveryTime | undefined,
  options: RedisStreamsRecordOptions,
  trimming: CompiledTrimming,
  noMkStream: boolean,
  capabilities: RedisStreamsCapabilities | undefined,
): XAddArgs {
  if (options.idempotencyKey !== undefined) {
    throw new RedisStreamsOptionError(
      options.repeat !== undefined ? 'repeat' : options.delay === undefined ? 'deliverAt' : 'delay',
      'cannot be combined with idempotencyKey: a held entry is written once by its promotion, IDMP does not apply to it',
    );
  }
  // A recurring entry: its key names the hold, its first occurrence defaults to one period from now
  // (a cron entry's is its rule's first, on Redis' clock: hold.lua drops the listed ones past).
  const repeat = resolveRepeat(options.repeat);
  const id = repeat?.holdId ?? holdId;
  let due = time ?? { mode: 'in' as const, ms: repeat?.everyMs ?? 0 };
  let recurrence: Recurrence;
  if (repeat?.cron !== undefined) {
    if (time !== undefined) {
      throw new RedisStreamsOptionError(options.delay === undefined ? 'deliverAt' : 'delay', 'cannot be combined with repeat.cron: the expression gives every occurrence, the first included');
    }
    const occurrences = firstOccurrences(repeat.cron, Date.now());
    recurrence = { cron: repeat.cron, occurrences };
    due = { mode: 'at', ms: occurrences[0] ?? 0 };
  } else if (repeat !== undefined) recurrence = { everyMs: repeat.everyMs };
  if (trimming.kind === 'none') return holdHead(id, due, { noMkStream, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, recurrence);
  const unsupported = trimmingUnsupported(trimming, capabilities, 'trim.onlyAcked');
  if (unsupported !== undefined) throw unsupported;
  if (trimming.kind === 'maxLen') {
    const [, operator, count] = trimming.args as [string, '~' | '=', string];
    return holdHead(id, due, { noMkStream, trim: 'maxLen', operator, amount: Number(count), onlyAcked: trimming.onlyAcked }, recurrence);
  }
  return holdHead(id, due, { noMkStream, trim: 'maxAge', operator: trimming.operator, amount: trimming.ageMs, onlyAcked: trimming.onlyAcked }, recurrence);
}

/** Writes the hold (one script call, batched with the tick's other commands); resolves with the hold id. */
export function sendHold(client: RedisClient | undefined, stream: string, args: XAddArgs): Promise<string> {
  if (client === undefined) return Promise.reject(new Error('Connection closed'));
  return holdEntry(client, stream, args);
}
