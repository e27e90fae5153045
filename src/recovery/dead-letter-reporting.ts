import type { RedisClient } from '../redis/connection.js';
import { deadLetterKey as defaultDeadLetterKey } from '../redis/keys.js';
import { moveToDeadLetter, RedisStreamsDeadLetterError, type DeadLetterMoveResult } from './dead-letter-move.js';
import { listenersFor } from './dead-letter-listeners.js';
import type { HandlerErrorMemory } from './handler-error-memory.js';
import type { DeadLetterNotice } from './recovery-events.js';
import type { RecoveryHost } from './recovery-host.js';
import type { ResolvedRecoveryOptions } from './recovery-options.js';
import { preview, type RecoveryReporter } from './recovery-reporter.js';
import { RecentIds } from './recent-ids.js';
import type { RecoveryTickResult } from './recovery-stats.js';

/** Counters a dead-letter move adds to (a tick's result, or the totals for moves outside ticks). */
export type MoveTally = Pick<RecoveryTickResult, 'deadLettered' | 'deletedPending'>;

/** One dead-letter move as recovery asks for it (see `moveToDeadLetter` for the conditions). */
export interface DeadLetterRequest {
  stream: string;
  group: string;
  ids: string[];
  reason: string;
  /** Error text of every id (a decode error). */
  error?: string;
  /** Error text per id (the handler's last error), over `error`. */
  errors?: Record<string, string>;
  expectedConsumer?: string;
  minDeliveries?: number;
  minIdleTime?: number;
}

/**
 * Dead-letter moves of a server's recovery and their reporting: every dead letter written is
 * logged, emitted as `deadLetter`, handed to the `onDeadLetter` option and to the app's
 * `@OnDeadLetter()` methods, and counted, also when the move failed part-way.
 */
export class DeadLetterReporting {
  /** Ids already reported too large to dead-letter (reported once, not on every tick). */
  private readonly reportedTooLarge = new RecentIds();

  constructor(
    private readonly host: RecoveryHost,
    private readonly options: ResolvedRecoveryOptions,
    private readonly reporter: RecoveryReporter,
    private readonly errors: HandlerErrorMemory,
  ) {}

  /** The dead-letter stream key of `stream` under these options. */
  keyFor(stream: string): string {
    return (this.options.deadLetterKey ?? defaultDeadLetterKey)(stream);
  }

  /** The handler errors this process remembers for `ids` (failures it saw itself). */
  rememberedErrors(stream: string, group: string, ids: readonly string[]): Record<string, string> {
    const errors: Record<string, string> = {};
    for (const id of ids) {
      const text = this.errors.get(stream, group, id);
      if (text !== undefined) errors[id] = text;
    }
    return errors;
  }

  /**
   * Moves, then reports every dead letter written (event, `onDeadLetter`, `tally`), also when the
   * move failed part-way: the ids moved before the failure are reported, then the error is rethrown.
   */
  async moveAndReport(redis: RedisClient, request: DeadLetterRequest, tally: MoveTally): Promise<DeadLetterMoveResult> {
    const deadLetterKey = this.keyFor(request.stream);
    let result: DeadLetterMoveResult;
    let failure: RedisStreamsDeadLetterError | undefined;
    try {
      const deleteEntry = this.host.deletePolicyFor?.(request.stream, request.group);
      result = await moveToDeadLetter(redis, {
        ...request,
        deadLetterKey,
        maxLen: this.options.deadLetterMaxLen,
        ...(deleteEntry === undefined ? {} : { deleteEntry: deleteEntry === 'ACKED' ? 'acked' : 'keepref' }),
      });
    } catch (error) {
      if (!(error instanceof RedisStreamsDeadLetterError)) throw error;
      failure = error;
      result = error.partial;
    }
    tally.deadLettered += result.moved.length;
    tally.deletedPending += result.tombstoned.length;
    const tombstones: string[] = [];
    const tooLarge: string[] = [];
    for (const outcome of result.outcomes) {
      if (outcome.status === 'too_large') tooLarge.push(outcome.id);
      if (outcome.status !== 'moved' && outcome.status !== 'tombstone') continue;
      const tombstone = outcome.status === 'tombstone';
      if (tombstone) tombstones.push(outcome.id);
      const notice: DeadLetterNotice = {
        stream: request.stream,
        group: request.group,
        id: outcome.id,
        reason: tombstone ? 'trimmed' : request.reason,
        error: tombstone ? '' : (request.errors?.[outcome.id] ?? request.error ?? ''),
        deliveryCount: outcome.deliveryCount,
        consumer: outcome.consumer ?? '',
        deadLetterKey,
        deadLetterId: outcome.deadLetterId ?? '',
        tombstone,
      };
      this.errors.forget(request.stream, request.group, outcome.id);
      if (!tombstone) {
        this.reporter.logger.warn(
          `dead-lettered entry ${outcome.id} of "${request.stream}" (group "${request.group}") to "${deadLetterKey}": ${notice.reason} after ${notice.deliveryCount} deliveries${notice.error ? `; last error: ${notice.error}` : ''}`,
        );
      }
      this.reporter.emit('deadLetter', notice);
      await this.callListeners(notice);
    }
    // The restart re-read may have seen (and reported) a tombstoned id before the script acked it.
    const lost = this.reporter.reportedLost.addNew(request.stream, request.group, tombstones);
    if (lost.length > 0) {
      this.reporter.lost({ stream: request.stream, group: request.group, reason: 'trimmed_pending', count: lost.length, ids: lost });
    }
    const newTooLarge = this.reportedTooLarge.addNew(request.stream, request.group, tooLarge);
    if (newTooLarge.length > 0) {
      this.reporter.counters.errors++;
      this.reporter.error(
        new Error(
          `${newTooLarge.length} entries of "${request.stream}" (group "${request.group}") have too many fields to be dead-lettered by a script; they stay pending and are not run again: ${preview(newTooLarge)}`,
        ),
      );
    }
    if (failure !== undefined) throw failure;
    return result;
  }

  /** The `onDeadLetter` option, then the app's `@OnDeadLetter()` methods that want this stream; each awaited, errors logged. */
  private async callListeners(notice: DeadLetterNotice): Promise<void> {
    const { logger } = this.reporter;
    const hook = this.options.onDeadLetter;
    if (hook !== undefined) {
      try {
        await hook(notice);
      } catch (error) {
        logger.error(`onDeadLetter threw: ${(error as Error).message}`);
      }
    }
    const patterns = this.host.handledStreams().filter((handled) => handled.stream === notice.stream && handled.pattern !== undefined).map((handled) => handled.pattern as string);
    for (const listener of listenersFor(notice.stream, patterns)) {
      try {
        await listener.call(notice);
      } catch (error) {
        logger.error(`@OnDeadLetter() ${listener.name} threw: ${(error as Error).message}`);
      }
    }
  }
}
