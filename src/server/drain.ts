import type { Logger } from '@nestjs/common';
import { CLOSE_BUDGET_MS, type CloseBudget } from '../redis/close-budget.js';
import type { RedisClient } from '../redis/connection.js';
import { withTimeout } from '../timeout.js';
import type { AckBatcher } from './ack-batcher.js';
import { errorMessage } from '../error-message.js';
import { handOffEntries } from './handoff.js';
import type { HandlerLanes } from './handler-lanes.js';
import type { KeyHolds } from './key-holds.js';
import type { PrefetchSlots } from './prefetch-slots.js';
import type { InFlightEntry } from './in-flight.js';
import type { RetryReleaser } from './retry-releaser.js';
import type { RunningStreams } from './running-streams.js';
import type { ServerEventEmitter } from './server-events.js';
import type { StreamReader } from './stream-reader.js';
import { RedisStreamsAbortError, type DeliveryAborts } from '../lifecycle/delivery-abort.js';

/** Bound of each Redis step of close() (handoff, final acks) when Redis does not answer. */
const CLOSE_STEP_TIMEOUT_MS = 5_000;

/** What `close()` drains: the running server's parts. */
export interface DrainTarget {
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  readonly commands: RedisClient;
  readonly consumer: string;
  readonly handoffConsumer: string;
  readonly shutdownTimeout: number;
  readonly acker: AckBatcher | undefined;
  readonly retries: RetryReleaser | undefined;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  readonly streams: RunningStreams;
  /** The running deliveries' `ctx.signal`s: aborted when `shutdownTimeout` passes. */
  readonly aborts: DeliveryAborts | undefined;
  /** Entries waiting here for a rate-limit token (entry-handling.ts `takeTokenOrHold`): not started, handed off with the queued ones. */
  readonly takeHeldEntries: () => InFlightEntry[];
}

/**
 * No handler starts any more (nor an entry held for a rate-limit token); the readers stop. A
 * blocked read that can be unblocked is given what is left of close()'s `budget` to return: all
 * of it with Redis answering (the read returns at once), and a Redis that does not answer spends
 * it here, not again on the QUITs after. A read that cannot be unblocked (a Cluster's) returns
 * after its `blockMs` even with Redis answering: it gets its own grace of at most the whole
 * budget's length, in parallel and not charged, so the recovery tick and the QUITs after keep
 * theirs.
 */
export async function stopReading(
  { slots, lanes, readers, handling }: { slots: PrefetchSlots; lanes: HandlerLanes; readers: readonly StreamReader[]; handling: { readonly keyHolds: KeyHolds } },
  budget: CloseBudget,
): Promise<void> {
  lanes.stop();
  handling.keyHolds.stop();
  slots.stopAccepting();
  const canUnblock = readers.filter((reader) => reader.canUnblock);
  const cannotUnblock = readers.filter((reader) => !reader.canUnblock);
  await Promise.all([
    budget.spend((graceMs) => Promise.all(canUnblock.map((reader) => reader.stop(graceMs)))),
    Promise.all(cannotUnblock.map((reader) => reader.stop(CLOSE_BUDGET_MS))),
  ]);
}

/**
 * The shutdown after the readers stopped: fetched but unstarted entries (queued, or held for their
 * key's token) are handed to the handoff consumer, running handlers get `shutdownTimeout`, then the last acks (and retry releases) go out.
 * Every Redis step is bounded; what fails stays pending (a duplicate later, never a loss).
 */
export async function drain(target: DrainTarget): Promise<void> {
  const { slots, lanes, events } = target;
  const queued = [...lanes.takeQueued(), ...target.takeHeldEntries()];
  // Settled before the handoff: lease renewals stop at once (a renewal after the handoff would
  // find them owned by the handoff consumer and report a lost lease).
  for (const entry of queued) entry.settled = true;
  if (queued.length > 0) {
    try {
      const moved = await withTimeout(
        handOffEntries(target.commands, queued, target.consumer, target.handoffConsumer),
        CLOSE_STEP_TIMEOUT_MS,
        'handoff',
      );
      target.logger.log(`handed ${moved} fetched but unstarted entries to consumer "${target.handoffConsumer}"`);
      events.emit('handoff', { count: moved, consumer: target.handoffConsumer });
    } catch (error) {
      events.error(new Error(`handoff of ${queued.length} entries failed; they stay pending here: ${errorMessage(error)}`));
    } finally {
      slots.releaseAll(queued);
    }
  }
  if (await waitForRunningHandlers(target)) await abandonStreams(target);
  try {
    await withTimeout(Promise.all([target.acker?.drain(), target.retries?.drain()]), CLOSE_STEP_TIMEOUT_MS, 'final acks');
  } catch (error) {
    // Unacked entries stay pending and come back later: a duplicate, never a loss.
    events.error(new Error(`${errorMessage(error)}; those entries stay pending`));
  }
}

/** True when handlers still ran at the end of `shutdownTimeout`. */
async function waitForRunningHandlers({ lanes, shutdownTimeout, logger, aborts }: DrainTarget): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), shutdownTimeout);
  });
  const late = await Promise.race([lanes.whenIdle().then(() => false), timedOut]);
  clearTimeout(timer);
  if (late) {
    logger.warn(`${lanes.runningCount()} handlers still ran after shutdownTimeout (${shutdownTimeout} ms); their entries stay pending`);
    aborts?.abortAll(new RedisStreamsAbortError('shutdown', `the server closed and shutdownTimeout (${shutdownTimeout} ms) passed`));
  }
  return late;
}

/**
 * The streamed replies still running are unsubscribed (their requests stay pending): a
 * never-completing Observable must not run on after close(), nor try to reply on closed
 * connections. A reply write in flight ends first.
 */
async function abandonStreams({ streams, logger, events }: DrainTarget): Promise<void> {
  if (streams.size === 0) return;
  logger.warn(`unsubscribed ${streams.size} handler Observables still running (streamed replies, events); their entries stay pending`);
  try {
    await withTimeout(streams.abandonAll(), CLOSE_STEP_TIMEOUT_MS, 'last streamed reply writes');
  } catch (error) {
    events.error(new Error(`${errorMessage(error)}; those requests stay pending`));
  }
}
