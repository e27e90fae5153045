import { setMaxListeners } from 'node:events';
import type { Logger } from '@nestjs/common';
import { connectionErrorCode, RedisStreamsConnectionError } from '../errors.js';
import { CapabilityWatch, CLIENT_COMMANDS, describeCapabilities, requireCommands, type RedisStreamsCapabilities } from '../redis/capabilities.js';
import { requireCapabilities } from '../redis/capability-requirements.js';
import {
  describeConnection,
  isClusterConnectionOption,
  isRedisClient,
  openConnection,
  type OpenedConnection,
  type RedisClient,
  type RedisConnection,
} from '../redis/connection.js';
import { isClusterConnection } from '../redis/cluster-connection.js';
import { connectFailure } from '../redis/connect-failure.js';
import { untilReady } from '../redis/ready.js';
import { batchThisTick } from '../redis/tick-batching.js';
import type { Redactor } from '../redaction.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { withTimeout } from '../timeout.js';
import { MAX_TIMER_MS } from '../validation.js';
import { clientRequirements } from './capability-needs.js';
import { ConnectionClosedError } from './connection-closed.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import { ServerClock } from './server-clock.js';
import type { RedisStreamsClientStatus } from './client-events.js';

export type { RedisStreamsClientEvents, RedisStreamsClientStatus } from './client-events.js';

export type XAddArgs = (string | Buffer)[];
/** ioredis flattens array arguments: passing the list whole saves a copy per XADD. */
export type XAdd = (args: XAddArgs) => Promise<string | null>;

/**
 * How many listeners the connection's `lifetime` signal takes before Node warns of a leak
 * (MaxListenersExceededWarning). Each emit waiting for its retry listens on it until its wait
 * ends: hundreds during an outage are normal; this many still waiting is more likely a leak.
 */
const LIFETIME_LISTENERS_WARNED_PAST = 10_000;

/** What the producer connection takes from the client. */
export interface ProducerHost {
  readonly config: ResolvedClientOptions;
  readonly logger: Logger;
  readonly redactor: Redactor;
  reportStatus(status: RedisStreamsClientStatus): void;
}

/**
 * The client's producer connection (XADDs, and the reply stream's upkeep): opened once on the
 * first `connect()`, checked for the commands the client needs, with the server clock that
 * `maxAge` trimming reads and the user's ioredis listeners kept across reconnects.
 */
export class ProducerConnection {
  /** The XADD of the open connection (the XADDs of one tick share one socket write); undefined while closed. */
  xadd: XAdd | undefined;
  /** Set at connect() only when OpenTelemetry is there and on: emits test this one reference. */
  telemetry: Telemetry | undefined;
  clock: ServerClock | undefined;
  /** The code of the open connection's last error (ECONNREFUSED while Redis is down…), until it is ready again. */
  lastErrorCode: string | undefined;
  /** Aborted when the connection is detached (`close()`): its calls stop waiting for a retry then. */
  lifetime: AbortSignal | undefined;
  private ending: AbortController | undefined;
  /** Between detach() and closed(): connect() fails instead of opening a connection close() would not close. */
  private closing = false;
  private opened: OpenedConnection | undefined;
  private connecting: Promise<RedisClient> | undefined;
  private generation = 0;
  private capabilityWatch: CapabilityWatch | undefined;
  private readonly eventListeners: { event: string; callback: (...args: unknown[]) => void }[] = [];

  constructor(private readonly host: ProducerHost) {}

  /** What the Redis server supports, probed on the first connect and after every reconnect; `undefined` before. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.capabilityWatch?.capabilities;
  }

  /**
   * What to build an XADD for now (capability-needs.ts): the last probe's result, or, after a
   * reconnect whose re-probe has not answered yet, the promise of that answer (a failover can land
   * on an older server); `undefined` while the connection is down.
   */
  capabilitiesNow(): RedisStreamsCapabilities | undefined | Promise<RedisStreamsCapabilities> {
    return this.capabilityWatch?.current();
  }

  /** The open connection's ioredis client, or undefined. */
  get client(): RedisClient | undefined {
    return this.opened?.client;
  }

  /** Opens the connection (idempotent; a failed attempt is retried by the next call). */
  connect(): Promise<RedisClient> {
    if (this.closing) return Promise.reject(new ConnectionClosedError());
    this.connecting ??= this.open().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }

  /** Listens to an ioredis event of the connection, now and after every reconnect. */
  addListener(event: string, callback: (...args: unknown[]) => void): void {
    this.eventListeners.push({ event, callback });
    this.opened?.client.on(event, callback);
  }

  /** Resolves once the server clock is known (connecting first if need be). */
  clockReady(): Promise<void> {
    const clock = this.clock;
    if (!clock) return this.connect().then(() => this.clockReady());
    clock.start();
    return clock.ready();
  }

  /**
   * Forgets the connection (an `open()` under way fails with "Connection closed"), ends the waits
   * of its calls for a retry and stops its clock and capability watch; returns it, for the caller
   * to close once the reply stream is gone. Until `closed()`, `connect()` fails with "Connection
   * closed": a call made while the client closes would open a connection nobody closes.
   */
  detach(): OpenedConnection | undefined {
    this.closing = true;
    this.generation++;
    this.ending?.abort();
    this.ending = undefined;
    this.lifetime = undefined;
    const opened = this.opened;
    this.opened = undefined;
    this.xadd = undefined;
    this.lastErrorCode = undefined;
    this.connecting = undefined;
    this.clock?.stop();
    this.clock = undefined;
    this.capabilityWatch?.stop();
    return opened;
  }

  /** close() is done: the next call connects again. */
  closed(): void {
    this.closing = false;
  }

  private async open(): Promise<RedisClient> {
    const generation = ++this.generation;
    const { config, redactor, logger } = this.host;
    const { commandTimeout } = config;
    const cluster = isClusterConnectionOption(config.connection);
    const opened = openConnection(
      config.connection,
      'client',
      // Many emits in flight share socket writes: per tick (batchThisTick) on one connection,
      // through ioredis' auto-pipelining on a Cluster. commandTimeout bounds every XADD.
      { enableAutoPipelining: cluster, commandTimeout, connectTimeout: commandTimeout, lazyConnect: true, ...noResend(config.connection) },
      true,
    );
    const client = opened.client;
    this.watchStatus(client);
    for (const { event, callback } of this.eventListeners) client.on(event, callback);
    // ioredis rejects connect() with "Connection is closed."; the reason is in the error event.
    let lastError: Error | undefined;
    const remember = (error: Error): void => {
      lastError = error;
    };
    client.on('error', remember);
    try {
      // Whatever its state (lazy, connecting, ready): emits issued meanwhile wait here, bounded.
      await withTimeout(untilReady(client), Math.min(MAX_TIMER_MS, commandTimeout + 1_000), 'connect');
    } catch (error) {
      client.disconnect();
      // The socket's code (ECONNREFUSED…), else ETIMEDOUT when the deadline passed without one.
      const { reason, cause, code } = connectFailure(error, lastError);
      throw redactor.error(new RedisStreamsConnectionError(`Cannot connect to Redis at ${describeConnection(config.connection)}: ${reason}`, { cause, code }));
    } finally {
      client.off('error', remember);
    }
    // Resolved once per connect: loads @opentelemetry/api if it is installed (an optional peer).
    const telemetry = await Telemetry.load(config.telemetry);
    // A server lacking a command we need fails the first connect, naming the command.
    const watch = new CapabilityWatch(client, (capabilities) => logger.debug?.(describeCapabilities(capabilities)), (error) =>
      logger.debug?.(`capability probe after a reconnect failed: ${(error as Error).message}`),
    );
    try {
      const capabilities = await withTimeout(watch.start(), commandTimeout, 'capability probe');
      requireCommands(capabilities, CLIENT_COMMANDS, 'RedisStreamsClient');
      requireCapabilities(capabilities, clientRequirements(config));
    } catch (error) {
      watch.stop();
      client.disconnect();
      throw error;
    }
    if (generation !== this.generation) {
      watch.stop();
      client.disconnect();
      throw new ConnectionClosedError();
    }
    this.capabilityWatch = watch;
    // From now on a command sent while the connection is down fails at once instead of
    // waiting in ioredis' offline queue (and being written later, after we reported failure).
    client.options.enableOfflineQueue = false;
    this.opened = opened;
    this.ending = new AbortController();
    this.lifetime = this.ending.signal;
    setMaxListeners(LIFETIME_LISTENERS_WARNED_PAST, this.lifetime);
    this.telemetry = telemetry;
    const xadd = client.xadd.bind(client) as unknown as XAdd;
    this.xadd = (args) => {
      batchThisTick(client);
      return xadd(args);
    };
    this.clock = new ServerClock(client, config.clockRefreshInterval);
    if (this.usesMaxAge()) this.clock.start();
    this.host.reportStatus('connected');
    return client;
  }

  private watchStatus(client: RedisClient): void {
    const { host } = this;
    let lastError: string | undefined;
    client.on('ready', () => {
      lastError = undefined;
      if (this.opened?.client !== client) return;
      this.lastErrorCode = undefined;
      host.reportStatus('connected');
    });
    client.on('reconnecting', () => {
      if (this.opened?.client === client) host.reportStatus('reconnecting');
    });
    client.on('end', () => {
      if (this.opened?.client === client) host.reportStatus('disconnected');
    });
    client.on('error', (error: Error) => {
      if (this.opened?.client !== client) return;
      this.lastErrorCode = connectionErrorCode(error) ?? this.lastErrorCode;
      // One line per outage, not one per reconnect attempt.
      if (error.message === lastError) return;
      lastError = error.message;
      host.logger.error(`Redis connection error: ${error.message}`);
    });
  }

  private usesMaxAge(): boolean {
    const { config } = this.host;
    if (config.trim.kind === 'maxAge') return true;
    for (const trimming of config.trimming.values()) if (trimming.kind === 'maxAge') return true;
    return false;
  }
}

/**
 * ioredis re-sends, after a reconnect, the commands whose replies the dropped connection never
 * brought (`autoResendUnfulfilledCommands`). For an XADD that is a second write the caller never
 * asked for: its emit may already have failed on commandTimeout (and been retried), or the first
 * write reached Redis (and a replica that was then promoted) with only the reply lost. So on the
 * connections we build (URL, ioredis options, Sentinel) an unanswered XADD stays a failed emit
 * (within commandTimeout), never a hidden write. A Cluster we build (`{ cluster: ... }`) re-sends
 * on its own every command of a node connection that closed unanswered ("Connection is closed.",
 * `retryDelayOnFailover`, also for auto-pipelined ones): after a master's kill -9 that wrote the
 * XADD again on the promoted replica; we set `retryDelayOnFailover: 0` there (MOVED, ASK,
 * TRYAGAIN and CLUSTERDOWN are still followed: Redis ran nothing then). An explicit
 * `autoResendUnfulfilledCommands` / `cluster.options.retryDelayOnFailover` wins; a Redis or
 * Cluster instance you pass keeps its settings.
 */
function noResend(connection: RedisConnection | undefined): { autoResendUnfulfilledCommands?: boolean; retryDelayOnFailover?: number } {
  if (isClusterConnection(connection)) return connection.cluster.options?.retryDelayOnFailover === undefined ? { retryDelayOnFailover: 0 } : {};
  if (isRedisClient(connection) || isClusterConnectionOption(connection)) return {};
  if (typeof connection === 'object' && connection !== null && 'autoResendUnfulfilledCommands' in connection) return {};
  return { autoResendUnfulfilledCommands: false };
}
