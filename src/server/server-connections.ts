import type { Logger } from '@nestjs/common';
import {
  CapabilityWatch,
  describeCapabilities,
  requireCommands,
  SERVER_COMMANDS,
  type RedisStreamsCapabilities,
} from '../redis/capabilities.js';
import { partitionedStreamsOf } from '../partitions/partition-keys.js';
import { checkPartitionCount, checkUnpartitioned } from '../partitions/partition-metadata.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import { requireCapabilities } from '../redis/capability-requirements.js';
import { CloseBudget } from '../redis/close-budget.js';
import { closeConnection, closeConnections, describeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { whenReady } from '../redis/ready.js';
import { MAX_TIMER_MS } from '../validation.js';
import { serverRequirements } from './ack-policy.js';
import { ConnectionStatusTracker, type RedisStreamsStatus } from './connection-status.js';
import { errorMessage } from '../error-message.js';
import { createGroup } from './groups.js';
import type { StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';

/** Connections behind `unwrap()`. */
export interface RedisStreamsConnections {
  /** Acks, replies, group creation, handoff. */
  readonly commands: RedisClient;
  /** One blocking reader connection per consumer group. */
  readonly readers: readonly RedisClient[];
}

/** What the connections report to the server. */
export interface ServerConnectionsHost {
  readonly options: ResolvedServerOptions;
  readonly logger: Logger;
  /** The folded status of every connection (the server's `status`). */
  reportStatus(status: RedisStreamsStatus): void;
  /** Capabilities are checked again after a reconnect only while listening. */
  isListening(): boolean;
  emitError(error: Error): void;
}

/**
 * The server's Redis connections: one for commands (acks, replies, groups, handoff) and one
 * blocking reader per reader group, with their folded status and the capability watch (probed at
 * `listen()` and after every reconnect).
 */
export class ServerConnections {
  private opened: OpenedConnection | undefined;
  private readonly readerConnections: OpenedConnection[] = [];
  private wakeConnection: OpenedConnection | undefined;
  private statusTracker: ConnectionStatusTracker | undefined;
  private capabilityWatch: CapabilityWatch | undefined;

  constructor(private readonly host: ServerConnectionsHost) {}

  /** What the Redis server supports; `undefined` before the first probe. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.capabilityWatch?.capabilities;
  }

  /** The command connection's client; `undefined` before `listen()`. */
  get commands(): RedisClient | undefined {
    return this.opened?.client;
  }

  get readers(): RedisClient[] {
    return this.readerConnections.map((opened) => opened.client);
  }

  /** Opens the command connection (it connects in the background; `ready()` waits for it). */
  openCommands(): RedisClient {
    // Not auto-pipelined: ioredis would send pipelined commands after direct ones of the same turn.
    const opened = openConnection(this.host.options.connection, 'server');
    this.opened = opened;
    this.statusTracker = new ConnectionStatusTracker((status) => this.host.reportStatus(status));
    this.statusTracker.watch(opened.client);
    if (opened.owned) opened.client.on('error', this.onConnectionError);
    return opened.client;
  }

  /**
   * Opens the blocking connection of one reader; it connects on its first read. `resendUnanswered`
   * false: a command the connection dropped unanswered fails instead of being sent again after the
   * reconnect (a limited read must run right after its grant: stream-reader.ts `readLimited`).
   */
  openReader(group: string, perSlot: boolean, resendUnanswered = true): RedisClient {
    const { options } = this.host;
    const opened = openConnection(
      options.connection,
      `server-reader:${group}`,
      {
        // A read waits for the reconnect instead of failing; the watchdog frees a read Redis never answers.
        maxRetriesPerRequest: null,
        blockingTimeout: Math.min(MAX_TIMER_MS, options.blockMs + 10_000),
        blockingTimeoutGrace: 5_000,
        // A Cluster's ready check asks a random node: one more connection per reader for nothing.
        ...(perSlot ? { enableReadyCheck: false } : {}),
        ...(resendUnanswered ? {} : { autoResendUnfulfilledCommands: false }),
      },
      true,
    );
    opened.client.on('error', this.onConnectionError);
    this.readerConnections.push(opened);
    this.statusTracker?.watch(opened.client);
    return opened.client;
  }

  /** The subscriber connection of the delayed wake-up, once opened (and until refused). */
  get delayedWake(): RedisClient | undefined {
    return this.wakeConnection?.client;
  }

  /**
   * Opens the subscriber connection of the delayed wake-up (delayed-wake-listener.ts), built like
   * the readers (a duplicate, so TLS, ACL user, Sentinel and Cluster follow), and connects it at
   * once; in the folded status like every other connection. The listener subscribes on each `ready`.
   */
  openDelayedWake(): void {
    const opened = openConnection(
      this.host.options.connection,
      'server-delayed-wake',
      // SUBSCRIBE waits for a reconnect instead of failing; the listener subscribes on each `ready`.
      { maxRetriesPerRequest: null, autoResubscribe: false },
      true,
    );
    opened.client.on('error', this.onConnectionError);
    this.wakeConnection = opened;
    this.statusTracker?.watch(opened.client);
    opened.client.connect().catch(() => undefined); // failures are its `error` events; it reconnects
  }

  /** Ends the delayed wake-up connection before close() (refused by the ACL): out of the status first. */
  endDelayedWake(): void {
    const opened = this.wakeConnection;
    this.wakeConnection = undefined;
    if (opened === undefined) return;
    this.statusTracker?.unwatch(opened.client);
    void closeConnection(opened);
  }

  /**
   * Waits for the command connection, probes the capabilities, creates the groups and checks the
   * partition count of every partitioned stream against the one recorded (recording it if none
   * is), and that no stream read unpartitioned is recorded as partitioned. Fails within `startupTimeout` (at once on wrong credentials) rather than retry forever,
   * and names a command or a capability an option needs that the server lacks.
   */
  async ready(bindings: readonly StreamBinding[]): Promise<void> {
    const { options } = this.host;
    const commands = this.opened?.client as RedisClient;
    // The readers use the same address and credentials; they connect on their first read.
    await whenReady(commands, options.startupTimeout, describeConnection(options.connection));
    this.capabilityWatch = new CapabilityWatch(commands, this.onCapabilities, (error) =>
      this.host.logger.debug?.(`capability probe after a reconnect failed: ${errorMessage(error)}`),
    );
    // The probe and the group creations go out together: listen() costs no extra round trip.
    const probed = this.capabilityWatch.start();
    const created = Promise.all(bindings.map((binding) => createGroup(commands, binding.stream, binding.group, binding.startId)));
    const partitioned = partitionedStreamsOf(bindings);
    const checked = Promise.all([
      ...[...partitioned].map(([stream, count]) => checkPartitionCount(commands, stream, count)),
      ...unpartitionedStreamsOf(bindings).map((stream) => this.checkUnpartitioned(commands, stream)),
    ]);
    this.warnEntriesNobodyReads(commands, [...partitioned.keys()], (stream) => `its partitions ("${stream}:p0" …)`, 'partitions');
    this.warnEntriesNobodyReads(commands, priorityStreamsOf(bindings), (stream) => `its priority lanes ("${stream}:<lane>")`, 'priorities');
    const [capabilities] = await Promise.allSettled([probed, created, checked]);
    // A server lacking a command or a capability an option needs fails here, naming it (before a
    // group error it may cause).
    if (capabilities.status === 'fulfilled') {
      requireCommands(capabilities.value, SERVER_COMMANDS, 'RedisStreamsServer');
      requireCapabilities(capabilities.value, serverRequirements(options));
    }
    await Promise.all([probed, created, checked]);
  }

  /**
   * A handler without `extras.partitions` on a stream the producers partitioned would read
   * `orders` while everything goes to `orders:p0` …: listen() fails instead. An ACL written before
   * the metadata key existed skips the check with a warning.
   */
  private async checkUnpartitioned(commands: RedisClient, stream: string): Promise<void> {
    try {
      await checkUnpartitioned(commands, stream);
    } catch (error) {
      if (!isNoPermission(error)) throw error;
      this.host.logger.warn(`cannot read the partition count of "${stream}" (${errorMessage(error)}): whether it is partitioned is not checked`);
    }
  }

  /**
   * A producer without the `partitions` (or `priorities`) setting writes to the stream itself,
   * which no partition (lane) reader reads: said at start-up when that stream holds entries (best
   * effort, never fails listen()). `readAs`: what the handlers read instead; `setting`: the
   * producers' option.
   */
  private warnEntriesNobodyReads(commands: RedisClient, streams: readonly string[], readAs: (stream: string) => string, setting: string): void {
    for (const stream of streams) {
      commands.xlen(stream).then(
        (length) => {
          if (length > 0) {
            this.host.logger.warn(
              `stream "${stream}" holds ${length} entries, but its handlers read ${readAs(stream)}: ` +
                `producers that do not set the same ${setting} write there and nobody reads them`,
            );
          }
        },
        () => undefined,
      );
    }
  }

  /**
   * Stops watching and closes every connection (also those of a failed start): the readers and the
   * wake-up first, the command connection last, within what is left of close()'s `budget` (with
   * Redis not answering, the first QUITs spend it and the command connection is dropped at once).
   */
  async close(budget = new CloseBudget()): Promise<void> {
    this.statusTracker?.stop();
    this.capabilityWatch?.stop();
    const wake = this.wakeConnection;
    this.wakeConnection = undefined;
    await closeConnections([...this.readerConnections, wake], budget);
    await closeConnections([this.opened], budget);
  }

  /** Logged once per distinct result; a reconnect to a server lacking a command we need is an error. */
  private readonly onCapabilities = (capabilities: RedisStreamsCapabilities): void => {
    const { host } = this;
    host.logger.debug?.(describeCapabilities(capabilities));
    if (!host.isListening()) return;
    try {
      requireCommands(capabilities, SERVER_COMMANDS, 'RedisStreamsServer');
      requireCapabilities(capabilities, serverRequirements(host.options));
    } catch (error) {
      host.emitError(error as Error);
    }
  };

  private readonly onConnectionError = (error: Error): void => {
    // ioredis reports every failed reconnect; the status events tell the story, so log at debug.
    this.host.logger.debug?.(`connection error: ${error.message}`);
  };
}

/** The streams read whole (no `extras.partitions`), each once; for priority lanes, the pattern's stream (what producers would partition). */
function unpartitionedStreamsOf(bindings: readonly StreamBinding[]): string[] {
  return [...new Set(bindings.filter((binding) => binding.partitionOf === undefined).map((binding) => binding.priorityOf ?? binding.stream))];
}

/** The patterns' streams that are read as priority lanes, each once. */
function priorityStreamsOf(bindings: readonly StreamBinding[]): string[] {
  return [...new Set(bindings.flatMap((binding) => (binding.priorityOf === undefined ? [] : [binding.priorityOf])))];
}
