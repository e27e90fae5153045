import { RedisStreamsOptionError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey as defaultDeadLetterKey } from '../redis/keys.js';
import { describe, integerOption, nonEmptyStringOption } from '../validation.js';
import type { DeadLetterReason } from './dead-letter-format.js';
import { batchSizeOption, millisecondsOption, streamIdListOption } from './recovery-validation.js';
import { batches, recoveryScripts } from './scripts/loader.js';

export interface MoveToDeadLetterRequest {
  /** Source stream key. */
  stream: string;
  group: string;
  /** Pending entry ids to move. Each is re-checked inside the script (still pending, owner, thresholds). */
  ids: readonly string[];
  /** Why: `max_deliveries`, `decode_error`, ... Stored as `dlq:reason` (a tombstone always says `trimmed`). */
  reason: DeadLetterReason;
  /** Error text stored with every id (`dlq:error`). Default `''`. */
  error?: string;
  /** Per-id error text, overriding `error`. */
  errors?: Readonly<Record<string, string>>;
  /** Move an entry only if this consumer still owns it. Default: any owner. */
  expectedConsumer?: string;
  /** Move an entry only if Redis has delivered it at least this often. Default 0 (no check). */
  minDeliveries?: number;
  /** Move an entry only if it has been idle at least this long, in ms. Default 0 (no check). */
  minIdleTime?: number;
  /** Dead-letter stream key. Default `deadLetterKey(stream)` (`orders` → `{orders}:dead`). */
  deadLetterKey?: string;
  /** Approximate MAXLEN of the dead-letter stream; 0 (default) never trims dead letters. */
  maxLen?: number;
  /** Ids per script call, 1..1000. Default 100. */
  batchSize?: number;
  /**
   * Work-queue mode (Redis 8.2+): acknowledge each moved entry with XACKDEL and this policy, so it
   * also leaves the source stream (`keepref`: at once; `acked`: once every group acknowledged it).
   * Default: XACK, the entry stays in the stream.
   */
  deleteEntry?: 'keepref' | 'acked';
}

export type DeadLetterMoveStatus =
  /** Copied to the dead-letter stream and acked. */
  | 'moved'
  /** The body was gone (trimmed/XDEL'ed while pending): a tombstone was written and the id acked. */
  | 'tombstone'
  /** Not in the group's pending list (already acked or dead-lettered, or never delivered). */
  | 'not_pending'
  /** Owned by another consumer than `expectedConsumer`. */
  | 'not_owner'
  | 'below_min_deliveries'
  | 'not_idle'
  /**
   * Its dead letter would need more arguments than a Lua script call can pass (more than ~3 900
   * field pairs): not attempted, it stays pending with its owner and count; the rest of the batch
   * is moved. Move such an entry yourself (XRANGE, XADD, XACK) or ack it away.
   */
  | 'too_large';

export interface DeadLetterMoveOutcome {
  id: string;
  status: DeadLetterMoveStatus;
  /** Id of the new dead letter (`moved` and `tombstone`), otherwise `null`. */
  deadLetterId: string | null;
  /** Owner when the script looked (`null` when not pending). */
  consumer: string | null;
  /** Delivery count when the script looked (0 when not pending). */
  deliveryCount: number;
}

export interface DeadLetterMoveResult {
  stream: string;
  deadLetterKey: string;
  group: string;
  /** One outcome per distinct requested id, in request order. */
  outcomes: DeadLetterMoveOutcome[];
  /** Ids moved with their body. */
  moved: string[];
  /** Ids whose body was gone: tombstoned and acked. */
  tombstoned: string[];
}

const MOVE_STATUSES: ReadonlySet<string> = new Set(['moved', 'tombstone', 'not_pending', 'not_owner', 'below_min_deliveries', 'not_idle', 'too_large']);

/**
 * A dead-letter move failed part-way (a Redis error in a batch, e.g. OOM on the dead-letter XADD).
 * `partial` lists what was done before the failure (its `moved` / `tombstoned` ids are in the
 * dead-letter stream and acked); `notMoved` are the ids left pending, untouched.
 */
export class RedisStreamsDeadLetterError extends Error {
  override readonly name = 'RedisStreamsDeadLetterError';

  constructor(
    readonly partial: DeadLetterMoveResult,
    readonly notMoved: readonly string[],
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Moves pending entries to the dead-letter stream atomically (one Lua script per batch): check the
 * entry is still pending (and owned / delivered / idle as required), XADD the dead letter, then
 * XACK. Running it again for the same ids is a no-op. A dead-letter key of the wrong type fails the
 * call before anything of that batch is acked (the entries stay pending).
 */
export async function moveToDeadLetter(client: RedisClient, request: MoveToDeadLetterRequest): Promise<DeadLetterMoveResult> {
  if (request === null || typeof request !== 'object') {
    throw new RedisStreamsOptionError('request', `must be an object, got ${describe(request)}`);
  }
  const stream = nonEmptyStringOption('stream', request.stream);
  const group = nonEmptyStringOption('group', request.group);
  const ids = streamIdListOption('ids', request.ids);
  const reason = nonEmptyStringOption('reason', request.reason);
  const error = optionalString('error', request.error, '');
  const errors = errorMapOption(request.errors);
  const expectedConsumer = optionalString('expectedConsumer', request.expectedConsumer, '');
  const minDeliveries = integerOption('minDeliveries', request.minDeliveries, 0, 0);
  const minIdleTime = millisecondsOption('minIdleTime', request.minIdleTime, 0);
  const deadLetterKey = nonEmptyStringOption('deadLetterKey', request.deadLetterKey, defaultDeadLetterKey(stream));
  if (deadLetterKey === stream) throw new RedisStreamsOptionError('deadLetterKey', `must differ from the stream key "${stream}"`);
  const maxLen = integerOption('maxLen', request.maxLen, 0, 0);
  const batchSize = batchSizeOption('batchSize', request.batchSize);
  const deletePolicy = deleteEntryOption(request.deleteEntry);

  const scripts = recoveryScripts(client);
  const outcomes: DeadLetterMoveOutcome[] = [];
  const result = (): DeadLetterMoveResult => ({
    stream,
    deadLetterKey,
    group,
    outcomes,
    moved: outcomes.filter((o) => o.status === 'moved').map((o) => o.id),
    tombstoned: outcomes.filter((o) => o.status === 'tombstone').map((o) => o.id),
  });
  for (const batch of batches(ids, batchSize)) {
    const pairs = batch.flatMap((id) => [id, errors?.[id] ?? error]);
    let rows: Awaited<ReturnType<typeof scripts.nrsDeadLetter>>;
    try {
      rows = await scripts.nrsDeadLetter(
        stream, deadLetterKey,
        group, expectedConsumer, minDeliveries, minIdleTime, reason, maxLen, deletePolicy, batch.length, ...pairs,
      );
    } catch (cause) {
      // The script checks the keys before its first write: nothing of this batch was written.
      throw partialFailure(result(), ids, (cause as Error).message, cause);
    }
    for (const row of rows) {
      if (String(row[1]) === 'failed') {
        // The ids before it in this batch are moved and in `outcomes`; it and the rest are not.
        throw partialFailure(result(), ids, `${String(row[0])}: ${String(row[2])}`);
      }
      outcomes.push(toOutcome(row));
    }
  }
  return result();
}

function partialFailure(partial: DeadLetterMoveResult, ids: readonly string[], message: string, cause?: unknown): RedisStreamsDeadLetterError {
  const done = new Set(partial.outcomes.map((outcome) => outcome.id));
  const notMoved = ids.filter((id) => !done.has(id));
  const movedCount = partial.moved.length + partial.tombstoned.length;
  return new RedisStreamsDeadLetterError(
    partial,
    notMoved,
    `dead-letter move to "${partial.deadLetterKey}" failed after ${movedCount} of ${ids.length} ids were moved; ${notMoved.length} stay pending: ${message}`,
    cause === undefined ? undefined : { cause },
  );
}

function toOutcome(row: readonly (string | number)[]): DeadLetterMoveOutcome {
  const [id, status, deadLetterId, consumer, deliveries] = row.map(String) as [string, string, string, string, string];
  if (!MOVE_STATUSES.has(status)) throw new Error(`dead-letter script returned an unknown status "${status}" for ${id}`);
  return {
    id,
    status: status as DeadLetterMoveStatus,
    deadLetterId: deadLetterId === '' ? null : deadLetterId,
    consumer: status === 'not_pending' ? null : consumer,
    deliveryCount: Number(deliveries),
  };
}

function deleteEntryOption(value: unknown): '' | 'KEEPREF' | 'ACKED' {
  if (value === undefined) return '';
  if (value === 'keepref') return 'KEEPREF';
  if (value === 'acked') return 'ACKED';
  throw new RedisStreamsOptionError('deleteEntry', `must be "keepref" or "acked", got ${describe(value)}`);
}

function optionalString(option: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') throw new RedisStreamsOptionError(option, `must be a string, got ${describe(value)}`);
  return value;
}

function errorMapOption(value: unknown): Readonly<Record<string, string>> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('errors', `must be an object mapping ids to error text, got ${describe(value)}`);
  }
  const map = Object.create(null) as Record<string, string>;
  for (const [id, text] of Object.entries(value)) {
    if (typeof text !== 'string') throw new RedisStreamsOptionError('errors', `error text of ${id} must be a string, got ${describe(text)}`);
    map[id] = text;
  }
  return map;
}
