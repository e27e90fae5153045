import { RedisStreamsOptionError } from '../errors.js';
import { holdEntry, holdHead } from '../delayed/hold.js';
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
  // A recurring entry: its key names the hold, its first occurrence defaults to one period from now.
  const repeat = resolveRepeat(options.repeat);
  const id = repeat?.holdId ?? holdId;
  const due = time ?? { mode: 'in' as const, ms: repeat?.everyMs ?? 0 };
  const every = repeat?.everyMs ?? 0;
  if (trimming.kind === 'none') return holdHead(id, due, { noMkStream, trim: 'none', operator: '~', amount: 0, onlyAcked: false }, every);
  const unsupported = trimmingUnsupported(trimming, capabilities, 'trim.onlyAcked');
  if (unsupported !== undefined) throw unsupported;
  if (trimming.kind === 'maxLen') {
    const [, operator, count] = trimming.args as [string, '~' | '=', string];
    return holdHead(id, due, { noMkStream, trim: 'maxLen', operator, amount: Number(count), onlyAcked: trimming.onlyAcked }, every);
  }
  return holdHead(id, due, { noMkStream, trim: 'maxAge', operator: trimming.operator, amount: trimming.ageMs, onlyAcked: trimming.onlyAcked }, every);
}

/** Writes the hold (one script call, batched with the tick's other commands); resolves with the hold id. */
export function sendHold(client: RedisClient | undefined, stream: string, args: XAddArgs): Promise<string> {
  if (client === undefined) return Promise.reject(new Error('Connection closed'));
  return holdEntry(client, stream, args);
}
