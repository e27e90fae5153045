import type { Logger } from '@nestjs/common';
import type { MessageHandler } from '@nestjs/microservices';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import { isClusterConnectionOption } from '../redis/connection.js';
import { deadLetterKey } from '../redis/keys.js';
import { checkSameSlot, deadLetterKeysOf } from '../redis/slot-check.js';
import { partitionedStreamsOf, sharedSlotsOf } from '../partitions/partition-keys.js';
import type { RecoveryEmit } from '../recovery/recovery-events.js';
import { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { AckBatcher } from './ack-batcher.js';
import { ackDeletePolicies, type AckDeletePolicy } from './ack-policy.js';
import { EntryHandling, type EntryHandlingParts, type HandlingHooks } from './entry-handling.js';
import { planPrefetch } from './flow-control.js';
import { bindHandlers, groupBindingsForReaders } from './handler-binding.js';
import { HandlerLanes } from './handler-lanes.js';
import { IdempotencyRecords } from './idempotency.js';
import type { EntryDecoders, StreamBinding } from './in-flight.js';
import type { ServerState } from './liveness.js';
import type { ResolvedServerOptions } from './options.js';
import { PrefetchSlots } from './prefetch-slots.js';
import { checkLaneSlots } from './priority-read.js';
import { ReaderHost, recreateGroups } from './reader-host.js';
import { RetryReleaser } from './retry-releaser.js';
import type { ServerConnections } from './server-connections.js';
import type { ServerEventEmitter } from './server-events.js';
import { ServerFlow } from './server-flow.js';
import { ServerRecoveryHost } from './server-recovery-host.js';
import { StreamReader } from './stream-reader.js';
import { DeliveryAborts } from '../lifecycle/delivery-abort.js';
import { LifecycleWriter } from '../lifecycle/lifecycle-writer.js';

/** What `listen()` builds from the handlers: their bindings and the machinery that moves their entries. */
export interface ServerParts {
  readonly bindings: readonly StreamBinding[];
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  readonly readers: readonly StreamReader[];
  readonly acker: AckBatcher;
  readonly retries: RetryReleaser;
  readonly handling: EntryHandling;
  /** Recovery's view of this server (prefetch for claims, what is in flight). */
  readonly host: ServerRecoveryHost;
  /** Started once the server listens. */
  readonly recovery: RecoveryScheduler;
  /** Set only when OpenTelemetry is there and on. */
  readonly telemetry: Telemetry | undefined;
  /** Paused groups and shared limits across workers; started before the readers. */
  readonly flow: ServerFlow;
}

/** What building the parts takes from the server. */
export interface ServerPartsSources {
  readonly options: ResolvedServerOptions;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  readonly decoders: EntryDecoders;
  /** Nest's handlers by pattern (`getHandlers()`). */
  readonly handlers: Map<string, MessageHandler>;
  readonly connections: ServerConnections;
  readonly hooks: HandlingHooks;
  readonly telemetry: Telemetry | undefined;
  /** What answering a request needs (reply writer, Nest's handler lookup and serializer). */
  readonly requests: EntryHandlingParts['requests'];
  readonly emitRecovery: RecoveryEmit;
  /** Recovery's log (context `RedisStreamsRecovery`), redacting as the server's does. */
  readonly recoveryLogger: Logger;
  readonly state: () => ServerState;
  capabilities(): RedisStreamsCapabilities | undefined;
}

/**
 * Validates the handlers' extras (before the first command), then builds every part at once and
 * opens the connections (command connection and one reader each; they connect in the background).
 *
 * One entry's way, each step a method go-to-definition follows: `StreamReader` (stream-reader.ts)
 * reads and parses the reply (read-reply.ts), takes prefetch slots (`PrefetchSlots.admitFresh`,
 * prefetch-slots.ts) and hands the entries to `HandlerLanes` (handler-lanes.ts), which starts
 * `EntryHandling.start` (entry-handling.ts): decode (`InFlightEntry.decode`, in-flight.ts), the
 * handler with its `RedisStreamsContext` (context.ts), then `ack`, queued in `AckBatcher`
 * (ack-batcher.ts), which sends the XACK.
 */
export function buildServerParts(sources: ServerPartsSources): ServerParts {
  const { options, logger, events, connections, hooks, telemetry } = sources;
  const bindings = bindHandlers(sources.handlers, options);
  // Streams of one read must share a slot on a Cluster: one reader per group + hash slot there.
  const perSlot = isClusterConnectionOption(options.connection);
  if (perSlot) checkLaneSlots(bindings);
  const readerGroups = groupBindingsForReaders(bindings, perSlot);
  const plan = planPrefetch(options, readerGroups);
  // Keys one script touches together must share a slot: a named error now, not CROSSSLOT at the first dead letter.
  const deadLetterKeys = deadLetterKeysOf(bindings.map((b) => b.stream), options.recovery.deadLetterKey ?? deadLetterKey, 'recovery.deadLetterKey');
  checkSameSlot(deadLetterKeys, perSlot, (message) => logger.warn(message));
  if (perSlot) warnSharedPartitionSlots(bindings, logger);

  const commands = connections.openCommands();
  const emitError = (error: Error): void => events.error(error);
  const deletePolicies = ackDeletePolicies(bindings, options.workQueue);
  // Work-queue mode only while the server has XACKDEL (a failover may land on an older one: plain XACK then).
  const deletePolicyOf = (binding: StreamBinding): AckDeletePolicy | undefined =>
    sources.capabilities()?.xackdel === true ? deletePolicies.get(binding) : undefined;

  const lanes = new HandlerLanes(options.concurrency, bindings);
  // A redelivery kept aside during its twin's ack is checked by the reader host (declared below; called only at run time).
  const slots = new PrefetchSlots(plan.prefetch, options.maxPrefetchBytes, (binding, incoming) => readerHost.readmitIfPending(binding, incoming));
  const readers: StreamReader[] = [];
  // Before the readers: a reader of a limited binding finds its limits on the binding.
  const flow = new ServerFlow(commands, bindings, options.consumer, options.blockMs, logger, (target, paused) => {
    // A reader blocked on a stream just paused returns now, and reads without it; one blocked on
    // its other streams returns at a resume, and reads the resumed one too.
    for (const reader of readers) {
      if (reader.reads(target.stream, target.group)) void (paused ? reader.interruptStaleRead() : reader.interrupt());
    }
  });
  const aborts = new DeliveryAborts(logger);
  const host = new ServerRecoveryHost({
    consumer: options.consumer,
    handoffConsumer: options.handoffConsumer,
    state: sources.state,
    bindings,
    slots,
    lanes,
    readers,
    commands,
    hooks,
    deletePolicyOf,
    telemetry,
    flow,
    aborts,
    leaseThreadConnection: { connection: options.connection, connectTimeout: options.startupTimeout },
  });
  const recovery = new RecoveryScheduler(host, options.recovery, sources.emitRecovery, sources.recoveryLogger);
  const records = new IdempotencyRecords(commands);
  const acker = new AckBatcher(commands, (entries) => slots.releaseAll(entries), emitError, undefined, deletePolicyOf, (binding) =>
    recreateGroups(commands, [binding], logger, events), records,
  );
  const retries = new RetryReleaser(commands, options.consumer, options.recovery, slots, emitError, logger);
  const handling = new EntryHandling({
    consumer: options.consumer,
    decoders: sources.decoders,
    logger,
    events,
    isClosed: () => sources.state() === 'closed',
    hooks,
    slots,
    lanes,
    acker,
    retries,
    records,
    recovery,
    telemetry,
    requests: sources.requests,
    aborts,
    lifecycle: new LifecycleWriter(commands, logger),
  });
  lanes.handledBy(handling);

  const readerHost = new ReaderHost({ options, logger, events, slots, lanes, commands, telemetry, recovery, flow });
  for (const group of readerGroups) {
    const first = group[0] as StreamBinding;
    readers.push(new StreamReader(first.group, group, connections.openReader(first.group, perSlot, StreamReader.limitedBindingOf(group) === undefined), readerHost, plan.shares[readers.length] as number));
  }
  return { bindings, slots, lanes, readers, acker, retries, handling, host, recovery, telemetry, flow };
}

/** Partitions of one stream hashed to one slot live on one master (and share a reader): correct, but not spread. */
function warnSharedPartitionSlots(bindings: readonly StreamBinding[], logger: Logger): void {
  for (const [stream, count] of partitionedStreamsOf(bindings)) {
    for (const [slot, keys] of sharedSlotsOf(stream, count)) {
      logger.warn(`partitions ${keys.join(', ')} of "${stream}" share hash slot ${slot}: they are read and handled as usual, but live on one master`);
    }
  }
}
