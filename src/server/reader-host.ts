import type { Logger } from '@nestjs/common';
import type { RedisClient } from '../redis/connection.js';
import type { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Dispatcher } from './dispatcher.js';
import { errorMessage } from '../error-message.js';
import { createGroup } from './groups.js';
import { pendingDeliveriesOf } from './redelivery-check.js';
import type { IncomingEntry, StreamBinding } from './in-flight.js';
import type { ReplyEntry } from './read-reply.js';
import type { ResolvedServerOptions } from './options.js';
import type { ServerEventEmitter } from './server-events.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** What a reader needs from the server. */
export interface ReaderHost {
  readonly consumer: string;
  readonly blockMs: number;
  readonly readBatch: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  readonly dispatcher: Dispatcher;
  /** The command connection (XPENDING for re-read delivery counts, CLIENT UNBLOCK on stop). */
  readonly commands: RedisClient;
  readonly logger: Logger;
  /** `reReadAt`: for a re-read of own pending entries, when its reply came (Date.now()). */
  deliver(binding: StreamBinding, entries: IncomingEntry[], reReadAt?: number): void;
  /** The entries of a fresh read (`>`, delivery count 1), as the reply holds them. */
  deliverFresh(binding: StreamBinding, entries: readonly ReplyEntry[]): void;
  /** Slots are on their way back within a round trip: acks are queued or in flight. */
  slotsReturning(): boolean;
  /** Own-PEL ids whose entry is gone from the stream: nothing to handle, ack them. */
  dropDeleted(binding: StreamBinding, ids: string[]): void;
  /** NOGROUP: recreate the groups of these bindings at `0`. */
  recreateGroups(bindings: readonly StreamBinding[]): Promise<void>;
}

/** The server's parts a reader reaches through its `ReaderHost`. */
export interface ReaderHostSources {
  readonly options: ResolvedServerOptions;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  readonly dispatcher: Dispatcher;
  readonly commands: RedisClient;
  readonly telemetry: Telemetry | undefined;
  /** Recovery starts after the readers are built. */
  recovery(): RecoveryScheduler | undefined;
}

/** What the readers get from the server: read entries go to the dispatcher, lost groups are recreated, deleted entries go to recovery. */
export function readerHostOf(sources: ReaderHostSources): ReaderHost {
  const { options, dispatcher, commands, logger, events } = sources;
  return {
    consumer: options.consumer,
    blockMs: options.blockMs,
    readBatch: options.readBatch,
    reconnectInitialMs: options.reconnectInitialMs,
    reconnectMaxMs: options.reconnectMaxMs,
    dispatcher,
    commands,
    logger,
    deliver: (binding, entries, reReadAt) => admitRead(sources, binding, entries, reReadAt),
    deliverFresh: (binding, entries) => admitFresh(sources, binding, entries),
    slotsReturning: () => dispatcher.slotsReturning(),
    // Own-PEL ids whose entry is gone: acked away, counted and reported by recovery (once, also if a tick found them too).
    dropDeleted: (binding, ids) => {
      sources
        .recovery()
        ?.ackLost(binding.stream, binding.group, ids)
        .catch((error: unknown) => events.error(new Error(`XACK of deleted entries failed; they stay pending: ${errorMessage(error)}`)));
    },
    recreateGroups: (bindings) => recreateGroups(commands, bindings, logger, events),
  };
}

/** NOGROUP (Redis lost the group): the groups of these bindings are created again. */
export async function recreateGroups(commands: RedisClient, bindings: readonly StreamBinding[], logger: Logger, events: ServerEventEmitter): Promise<void> {
  for (const binding of bindings) {
    // Never `$`: entries written between the loss and now must not be skipped.
    if (await createGroup(commands, binding.stream, binding.group, '0')) {
      logger.warn(`recreated group "${binding.group}" on "${binding.stream}" at 0`);
      events.emit('groupRecreated', { stream: binding.stream, group: binding.group });
    }
  }
}

/**
 * Entries from a read. A re-read of this consumer's own pending list (a restart under the same
 * name) raises their Redis delivery count: past the limit they are dead-lettered, not run again
 * (only if idle since the re-read: an entry claimed or renewed meanwhile is someone's work).
 */
function admitRead(sources: ReaderHostSources, binding: StreamBinding, entries: IncomingEntry[], reReadAt?: number): void {
  const { dispatcher } = sources;
  sources.telemetry?.consumed(binding.stream, binding.group, entries.length);
  const limit = binding.maxDeliveries ?? sources.options.recovery.maxDeliveries;
  const exhausted = entries.filter((entry) => entry.deliveryCount > limit);
  if (exhausted.length === 0) {
    dispatcher.admit(binding, entries);
    return;
  }
  dispatcher.admit(binding, entries.filter((entry) => entry.deliveryCount <= limit));
  void sources.recovery()?.deadLetterExhausted(binding.stream, binding.group, exhausted.map((entry) => entry.id), reReadAt);
}

/**
 * Entries of a fresh read (`>`): first deliveries, so none is past `maxDeliveries` (at least 1)
 * and none needs the check; they go to the dispatcher as the reply holds them.
 */
function admitFresh(sources: ReaderHostSources, binding: StreamBinding, entries: readonly ReplyEntry[]): void {
  sources.telemetry?.consumed(binding.stream, binding.group, entries.length);
  sources.dispatcher.admitFresh(binding, entries);
}

/**
 * A delivery read while its twin's ack was in flight (`Dispatcher` keeps it aside): handled if that
 * ack did not cover it, i.e. it is still pending for this consumer. While stopping, it stays
 * pending in Redis and recovery brings it back.
 */
export function readmitIfPending(sources: ReaderHostSources, binding: StreamBinding, incoming: IncomingEntry): void {
  const { dispatcher, commands, options, events } = sources;
  if (!dispatcher.isAccepting) return;
  pendingDeliveriesOf(commands, binding.stream, binding.group, incoming.id, options.consumer).then(
    (deliveryCount) => {
      if (deliveryCount !== undefined && dispatcher.isAccepting) admitRead(sources, binding, [{ ...incoming, deliveryCount }]);
    },
    (error: unknown) =>
      events.error(new Error(`could not check entry ${incoming.id} of "${binding.stream}", read again during its ack; it stays pending: ${errorMessage(error)}`)),
  );
}
