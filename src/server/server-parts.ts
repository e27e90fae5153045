import type { Logger } from '@nestjs/common';
import type { MessageHandler } from '@nestjs/microservices';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import { isClusterConnectionOption } from '../redis/connection.js';
import { deadLetterKey } from '../redis/keys.js';
import { checkSameSlot, deadLetterKeysOf } from '../redis/slot-check.js';
import { partitionedStreamsOf, sharedSlotsOf } from '../partitions/partition-keys.js';
import type { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { AckBatcher } from './ack-batcher.js';
import { ackDeletePolicies, type AckDeletePolicy } from './ack-policy.js';
import { StreamReader } from './consumer-loop.js';
import { Dispatcher } from './dispatcher.js';
import type { EntryHandling, EntryHandlingParts } from './entry-handling.js';
import { planPrefetch } from './flow-control.js';
import { bindHandlers, groupBindingsForReaders } from './handler-binding.js';
import { IdempotencyRecords } from './idempotency.js';
import type { InFlightEntry, StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';
import { readerHostOf, readmitIfPending, recreateGroups } from './reader-host.js';
import { RetryReleaser } from './retry-releaser.js';
import type { ServerConnections } from './server-connections.js';
import type { ServerEventEmitter } from './server-events.js';

/** Life of a server: `listen()` goes from idle to listening, `close()` to closed. */
export type ServerState = 'idle' | 'starting' | 'listening' | 'closing' | 'closed';

/** What `listen()` builds from the handlers: their bindings and the machinery that moves their entries. */
export interface ServerParts {
  readonly bindings: readonly StreamBinding[];
  readonly bindingsByKey: ReadonlyMap<string, StreamBinding>;
  readonly dispatcher: Dispatcher;
  readonly readers: readonly StreamReader[];
  readonly acker: AckBatcher;
  readonly retries: RetryReleaser;
  /** Set only when OpenTelemetry is there and on. */
  readonly telemetry: Telemetry | undefined;
  /** Work-queue mode: the XACKDEL policy of a binding while the server has XACKDEL. */
  readonly deletePolicyOf: (binding: StreamBinding) => AckDeletePolicy | undefined;
}

/** What building the parts takes from the server. */
export interface ServerPartsSources {
  readonly options: ResolvedServerOptions;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  /** Nest's handlers by pattern (`getHandlers()`). */
  readonly handlers: Map<string, MessageHandler>;
  readonly connections: ServerConnections;
  readonly handling: EntryHandling;
  readonly telemetry: Telemetry | undefined;
  /** What answering a request needs (reply writer, Nest's handler lookup and serializer). */
  readonly requests: EntryHandlingParts['requests'];
  capabilities(): RedisStreamsCapabilities | undefined;
  /** Recovery starts after the parts are built. */
  recovery(): RecoveryScheduler | undefined;
}

/**
 * Validates the handlers' extras (before the first command), then builds the parts and opens the
 * connections (command connection and one reader each; they connect in the background). Entry
 * handling is wired to the parts.
 */
export function buildServerParts(sources: ServerPartsSources): ServerParts {
  const { options, logger, events, connections, handling } = sources;
  const bindings = bindHandlers(sources.handlers, options);
  // Streams of one read must share a slot on a Cluster: one reader per group + hash slot there.
  const perSlot = isClusterConnectionOption(options.connection);
  const readerGroups = groupBindingsForReaders(bindings, perSlot);
  const plan = planPrefetch(options, readerGroups);
  // Keys one script touches together must share a slot: a named error now, not CROSSSLOT at the first dead letter.
  const deadLetterKeys = deadLetterKeysOf(bindings.map((b) => b.stream), options.recovery.deadLetterKey ?? deadLetterKey, 'recovery.deadLetterKey');
  checkSameSlot(deadLetterKeys, perSlot, (message) => logger.warn(message));
  if (perSlot) warnSharedPartitionSlots(bindings, logger);

  const commands = connections.openCommands();
  const dispatcher = new Dispatcher(
    plan.prefetch,
    options.concurrency,
    bindings,
    handling.start,
    options.maxPrefetchBytes,
    (binding, incoming) => readmitIfPending(hostSources, binding, incoming),
    handling.startBatch,
  );
  const deletePolicies = ackDeletePolicies(bindings, options.workQueue);
  // Work-queue mode only while the server has XACKDEL (a failover may land on an older one: plain XACK then).
  const deletePolicyOf = (binding: StreamBinding): AckDeletePolicy | undefined =>
    sources.capabilities()?.xackdel === true ? deletePolicies.get(binding) : undefined;
  const records = new IdempotencyRecords(commands);
  const emitError = (error: Error): void => events.error(error);
  const acker = new AckBatcher(commands, handling.releaseAll, emitError, undefined, deletePolicyOf, (binding) =>
    recreateGroups(commands, [binding], logger, events), records,
  );
  const slots = { markReturning: (entry: InFlightEntry) => dispatcher.markReturning(entry), release: handling.release };
  const retries = new RetryReleaser(commands, options.consumer, options.recovery, slots, emitError, logger);
  const { telemetry } = sources;
  handling.wire({ dispatcher, acker, retries, records, telemetry, requests: sources.requests });

  const hostSources = { options, logger, events, dispatcher, commands, telemetry, recovery: sources.recovery };
  const host = readerHostOf(hostSources);
  const readers = readerGroups.map((group, index) => {
    const first = group[0] as StreamBinding;
    const client = connections.openReader(first.group, perSlot);
    return new StreamReader(first.group, group, client, host, plan.shares[index] as number);
  });
  const bindingsByKey = new Map(bindings.map((binding) => [binding.key, binding]));
  return { bindings, bindingsByKey, dispatcher, readers, acker, retries, telemetry, deletePolicyOf };
}

/** Partitions of one stream hashed to one slot live on one master (and share a reader): correct, but not spread. */
function warnSharedPartitionSlots(bindings: readonly StreamBinding[], logger: Logger): void {
  for (const [stream, count] of partitionedStreamsOf(bindings)) {
    for (const [slot, keys] of sharedSlotsOf(stream, count)) {
      logger.warn(`partitions ${keys.join(', ')} of "${stream}" share hash slot ${slot}: they are read and handled as usual, but live on one master`);
    }
  }
}
