import type { Logger } from '@nestjs/common';
import { errorMessage } from '../error-message.js';
import type { RedisClient } from '../redis/connection.js';
import type { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { createGroup } from './groups.js';
import type { HandlerLanes } from './handler-lanes.js';
import type { IncomingEntry, StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';
import type { PrefetchSlots } from './prefetch-slots.js';
import { pendingDeliveriesOf } from './redelivery-check.js';
import type { ServerEventEmitter } from './server-events.js';
import type { ServerFlow } from './server-flow.js';

/** What the readers share: the read options, the slots and lanes their entries go to, and the rare paths (re-reads, lost groups, deleted entries). */
export interface ReaderHostParts {
  readonly options: ResolvedServerOptions;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  /** The command connection (XPENDING for re-read delivery counts, CLIENT UNBLOCK on stop). */
  readonly commands: RedisClient;
  /** Set only when OpenTelemetry is there and on. */
  readonly telemetry: Telemetry | undefined;
  readonly recovery: RecoveryScheduler;
  /** Paused groups and shared limits, asked before each read. */
  readonly flow: ServerFlow;
}

/**
 * What the readers (stream-reader.ts) get from the server. A fresh read's entries go straight to
 * the slots and lanes (the reader does that itself); re-reads of the own pending list and
 * redeliveries come here, where exhausted entries go to recovery, and lost groups are recreated.
 */
export class ReaderHost {
  readonly consumer: string;
  readonly blockMs: number;
  readonly readBatch: number;
  readonly reconnectInitialMs: number;
  readonly reconnectMaxMs: number;
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  readonly commands: RedisClient;
  readonly logger: Logger;
  readonly telemetry: Telemetry | undefined;
  readonly flow: ServerFlow;

  constructor(private readonly parts: ReaderHostParts) {
    const { options } = parts;
    this.consumer = options.consumer;
    this.blockMs = options.blockMs;
    this.readBatch = options.readBatch;
    this.reconnectInitialMs = options.reconnectInitialMs;
    this.reconnectMaxMs = options.reconnectMaxMs;
    ({ slots: this.slots, lanes: this.lanes, commands: this.commands, logger: this.logger, telemetry: this.telemetry, flow: this.flow } = parts);
  }

  /**
   * Entries of a re-read (`reReadAt`: when its reply came, Date.now()) or a redelivery. A re-read
   * of this consumer's own pending list (a restart under the same name) raises their Redis
   * delivery count: past the limit they are dead-lettered, not run again (only if idle since the
   * re-read: an entry claimed or renewed meanwhile is someone's work).
   */
  deliver(binding: StreamBinding, entries: IncomingEntry[], reReadAt?: number): void {
    const { slots, lanes, parts } = this;
    this.telemetry?.consumed(binding.stream, binding.group, entries.length);
    const limit = binding.maxDeliveries ?? parts.options.recovery.maxDeliveries;
    const exhausted = entries.filter((entry) => entry.deliveryCount > limit);
    if (exhausted.length === 0) {
      lanes.queued(binding, slots.admit(binding, entries));
      return;
    }
    lanes.queued(binding, slots.admit(binding, entries.filter((entry) => entry.deliveryCount <= limit)));
    void parts.recovery.deadLetterExhausted(binding.stream, binding.group, exhausted.map((entry) => entry.id), reReadAt);
  }

  /** Own-PEL ids whose entry is gone from the stream: acked away, counted and reported by recovery (once, also if a tick found them too). */
  dropDeleted(binding: StreamBinding, ids: string[]): void {
    this.parts.recovery
      .ackLost(binding.stream, binding.group, ids)
      .catch((error: unknown) => this.parts.events.error(new Error(`XACK of deleted entries failed; they stay pending: ${errorMessage(error)}`)));
  }

  /** NOGROUP: recreate the groups of these bindings at `0`. */
  recreateGroups(bindings: readonly StreamBinding[]): Promise<void> {
    return recreateGroups(this.commands, bindings, this.logger, this.parts.events);
  }

  /**
   * A delivery read while its twin's ack was in flight (`PrefetchSlots` keeps it aside): handled
   * if that ack did not cover it, i.e. it is still pending for this consumer. While stopping, it
   * stays pending in Redis and recovery brings it back.
   */
  readmitIfPending(binding: StreamBinding, incoming: IncomingEntry): void {
    const { slots, commands, consumer } = this;
    if (!slots.isAccepting) return;
    pendingDeliveriesOf(commands, binding.stream, binding.group, incoming.id, consumer).then(
      (deliveryCount) => {
        if (deliveryCount !== undefined && slots.isAccepting) this.deliver(binding, [{ ...incoming, deliveryCount }]);
      },
      (error: unknown) =>
        this.parts.events.error(new Error(`could not check entry ${incoming.id} of "${binding.stream}", read again during its ack; it stays pending: ${errorMessage(error)}`)),
    );
  }
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
