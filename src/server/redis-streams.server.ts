import type { Logger } from '@nestjs/common';
import {
  Server,
  type ConsumerDeserializer,
  type CustomTransportStrategy,
  type MessageHandler,
  type MsPattern,
} from '@nestjs/microservices';
import { JsonStreamDeserializer, type StreamDeserializer } from '../codec/stream-deserializer.js';
import { CloseBudget } from '../redis/close-budget.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import { RedactingLogger } from '../redacting-logger.js';
import { Redactor } from '../redaction.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { errorMessage } from '../error-message.js';
import { RedisStreamsOptionError } from '../errors.js';
import { pauseGroup, pausedSince, resumeGroup } from '../flow/pause-state.js';
import { streamKeyFor } from '../redis/keys.js';
import { withTimeout } from '../timeout.js';
import { describe } from '../validation.js';
import type { RedisStreamsStatus } from './connection-status.js';
import { DelayedPromoter } from './delayed-promoter.js';
import { DelayedWakeListener } from './delayed-wake-listener.js';
import { drain, stopReading } from './drain.js';
import type { HandlingHooks } from './entry-handling.js';
import { keepEarlierEventHandlers } from './handler-binding.js';
import { captureHandlerErrors } from './handler-error-capture.js';
import type { EntryDecoders } from './in-flight.js';
import { listeningServers, type RedisStreamsLiveness, type ServerState } from './liveness.js';
import { ProcessingHooks, type ProcessingEndHook, type ProcessingStartHook } from './processing-hooks.js';
import { resolveServerOptions, type RedisStreamsServerOptions, type ResolvedServerOptions } from './options.js';
import { ReplyWriter } from './reply-writer.js';
import { serializeWith } from './request-replies.js';
import { ServerConnections, type RedisStreamsConnections } from './server-connections.js';
import { ServerEventEmitter, type RedisStreamsServerEvents } from './server-events.js';
import { ServerObservation } from './server-observation.js';
import { buildServerParts, type ServerParts } from './server-parts.js';
import type { ServerRecoveryHost } from './server-recovery-host.js';

/** Bound of giving back permits on close when Redis does not answer (their lease brings them back anyway). */
const FLOW_STOP_TIMEOUT_MS = 5_000;

/** Transport id of this server: `@EventPattern('x', REDIS_STREAMS_TRANSPORT)` binds a handler to it only. */
export const REDIS_STREAMS_TRANSPORT = Symbol.for('nestjs-redis-streams');

export type { RedisStreamsServerEvents } from './server-events.js';
export type { RedisStreamsConnections } from './server-connections.js';

/**
 * NestJS transport strategy for Redis Streams. Every `@EventPattern` / `@MessagePattern` handler
 * reads its own stream (`streamPrefix + pattern`) through a consumer group; entries are acked only after
 * the handler succeeded. See docs/server.md.
 *
 * The class Nest sees: its life cycle (listen, close). server-parts.ts builds the parts that do
 * the work, and names one entry's way through them: server-connections.ts (connections,
 * capabilities), stream-reader.ts (reads), entry-handling.ts (one entry, decode to ack),
 * request-handling.ts (replies), server-recovery-host.ts (what recovery uses), drain.ts
 * (shutdown), server-observation.ts (liveness, telemetry).
 */
export class RedisStreamsServer extends Server<RedisStreamsServerEvents, RedisStreamsStatus> implements CustomTransportStrategy {
  override readonly transportId = REDIS_STREAMS_TRANSPORT;
  /** Handler failures must reach us (we await handlers ourselves) so that a failed entry is not acked. */
  override readonly propagatesEventHandlerErrors = true;
  /** Every log line, error and event payload passes the redactor: no password leaves the server. */
  protected override readonly logger: Logger;
  private readonly redactor: Redactor;

  private readonly options: ResolvedServerOptions;
  private readonly events: ServerEventEmitter;
  private state: ServerState = 'idle';
  private readonly connections: ServerConnections;
  private readonly decoders: EntryDecoders;
  /** Set at any time; entry handling reads them. `processing` is built when a hook is set: until then the per-entry path has no hook step at all. */
  private readonly hooks: HandlingHooks = { processing: undefined, leaseExtender: undefined };
  /** Built at listen(). */
  private parts: ServerParts | undefined;
  private promoter: DelayedPromoter | undefined;
  private wakeListener: DelayedWakeListener | undefined;
  private readonly observation: ServerObservation;
  private readonly replies: ReplyWriter;

  constructor(options: RedisStreamsServerOptions) {
    super();
    this.options = resolveServerOptions(options);
    this.redactor = Redactor.for(this.options.connection);
    this.logger = new RedactingLogger(RedisStreamsServer.name, this.redactor);
    this.events = new ServerEventEmitter(this.logger, this.redactor);
    this.replies = new ReplyWriter(() => this.commandConnection(), {
      maxLen: this.options.replyMaxLen,
      ttlMs: this.options.replyTtl,
    });
    const decoder: StreamDeserializer = options.deserializer ?? new JsonStreamDeserializer();
    this.decoders = { decoder, defaultDecoder: decoder.constructor === JsonStreamDeserializer ? (decoder as JsonStreamDeserializer) : undefined };
    this.connections = new ServerConnections({
      options: this.options,
      logger: this.logger,
      reportStatus: (status) => this._status$.next(status),
      isListening: () => this.state === 'listening',
      emitError: (error) => this.events.error(error),
    });
    this.observation = new ServerObservation({
      options: this.options,
      events: this.events,
      state: () => this.state,
      commands: () => this.connections.commands,
      parts: () => this.parts,
    });
    this.initializeSerializer(options);
    this.initializeDeserializer({ deserializer: decoder as unknown as ConsumerDeserializer });
    captureHandlerErrors();
  }

  /** The consumer name this server reads as. */
  get consumer(): string {
    return this.options.consumer;
  }

  /** What the Redis server supports, probed at `listen()` and after every reconnect; `undefined` before. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.connections.capabilities;
  }

  async listen(callback: (error?: unknown) => void): Promise<void> {
    try {
      await this.start();
    } catch (error) {
      callback(this.redactor.error(error));
      return;
    }
    callback();
  }

  async close(): Promise<void> {
    if (this.state === 'closed' || this.state === 'closing') return;
    const wasRunning = this.state === 'listening';
    this.state = 'closing';
    // One wait on a Redis that does not answer, shared by the reader stop, a recovery tick in
    // progress, a lease renewal or error records in flight, and the QUITs.
    const budget = new CloseBudget();
    listeningServers.delete(this);
    try {
      // Stop taking work: no handler starts, the readers stop, then recovery's ticks (entries of a
      // claim in flight are queued, so the handoff below gets them; a tick Redis does not answer is
      // given what the budget left). Leases keep the running handlers' entries until drained.
      if (wasRunning) await stopReading(this.parts as ServerParts, budget);
      const recovery = this.parts?.recovery;
      if (recovery !== undefined) await budget.spend((waitMs) => recovery.stopTicks(waitMs));
      this.promoter?.stop();
      this.wakeListener?.stop();
      if (wasRunning) await this.drain(this.parts as ServerParts);
    } finally {
      await this.stopFlow();
      const recovery = this.parts?.recovery;
      if (recovery !== undefined) await budget.spend((waitMs) => recovery.stop(waitMs));
      this.observation.stop();
      await this.connections.close(budget);
      this.state = 'closed';
      if (wasRunning) this._status$.next('disconnected');
    }
  }

  override on<
    EventKey extends keyof RedisStreamsServerEvents = keyof RedisStreamsServerEvents,
    EventCallback extends RedisStreamsServerEvents[EventKey] = RedisStreamsServerEvents[EventKey],
  >(event: EventKey, callback: EventCallback): void {
    this.events.on(event, callback as unknown as (...args: unknown[]) => void);
  }

  /** Nest's, except that event handlers declared before their pattern's message handler are kept. */
  override addHandler(pattern: unknown, callback: MessageHandler, isEventHandler = false, extras: Record<string, unknown> = {}): void {
    const key = this.normalizePattern(pattern as MsPattern);
    const previous = this.messageHandlers.get(key);
    super.addHandler(pattern, callback, isEventHandler, extras);
    keepEarlierEventHandlers(key, previous, callback);
  }

  /**
   * Nest 12's: the hook runs around every handled entry (a batch: once per batch), with its
   * `RedisStreamsContext` (`RedisStreamsBatchContext`). Nest 11 has no processing hooks; this
   * server runs them there too when set.
   */
  override setOnProcessingStartHook(hook: ProcessingStartHook): void {
    (super.setOnProcessingStartHook as ((hook: ProcessingStartHook) => void) | undefined)?.call(this, hook);
    this.useProcessingHooks().setStart(hook);
  }

  /** Nest 12's: runs once when an entry's (a batch's) handling ended. See setOnProcessingStartHook. */
  override setOnProcessingEndHook(hook: ProcessingEndHook): void {
    (super.setOnProcessingEndHook as ((hook: ProcessingEndHook) => void) | undefined)?.call(this, hook);
    this.useProcessingHooks().setEnd(hook);
  }

  /** `{ commands, readers }`: the ioredis clients this server uses. Only after `listen()`. */
  unwrap<T = RedisStreamsConnections>(): T {
    const commands = this.connections.commands;
    if (commands === undefined) {
      throw new Error('Not initialized. Please call the "listen"/"startAllMicroservices" method before accessing the server.');
    }
    const connections: RedisStreamsConnections = { commands, readers: this.connections.readers };
    return connections as T;
  }

  /** A snapshot for health checks: connections, read loops, prefetch, recovery ticks (see docs/observability.md). No Redis command. */
  liveness(): RedisStreamsLiveness {
    return this.observation.liveness();
  }

  /** @internal The command connection (after `listen()`). */
  commandConnection(): RedisClient {
    return this.unwrap<RedisStreamsConnections>().commands;
  }

  /** @internal Recovery's view of this server (prefetch slots, in-flight entries); tests read it too. Only after `listen()`. */
  recoveryHost(): ServerRecoveryHost {
    if (this.parts === undefined) throw new Error('RedisStreamsServer has not listened yet: no recovery host');
    return this.parts.host;
  }

  /**
   * Pauses `pattern`'s group (default: the server's `group`) for every worker at once: they stop
   * reading it within one pause poll (half `blockMs`, at most 1 s), handlers already running
   * finish, nothing is lost. The state is kept in Redis, so it outlasts restarts. Resolves `true`
   * when it was running. Only after `listen()`. See docs/flow-control.md.
   */
  async pause(pattern: string, group = this.options.group): Promise<boolean> {
    const paused = await pauseGroup(this.commandConnection(), this.pausedStreamOf(pattern), group);
    // This worker need not wait for its next poll.
    await this.parts?.flow.pauses.refresh();
    return paused;
  }

  /** Resumes `pattern`'s group for every worker. Resolves `true` when it was paused. Only after `listen()`. */
  async resume(pattern: string, group = this.options.group): Promise<boolean> {
    const resumed = await resumeGroup(this.commandConnection(), this.pausedStreamOf(pattern), group);
    await this.parts?.flow.pauses.refresh();
    return resumed;
  }

  /** Whether `pattern`'s group is paused, as Redis says now. Only after `listen()`. */
  async isPaused(pattern: string, group = this.options.group): Promise<boolean> {
    return (await pausedSince(this.commandConnection(), this.pausedStreamOf(pattern), group)) !== undefined;
  }

  /** The stream a pattern's pause is kept on: `streamPrefix + pattern` (a partitioned pattern's partitions all follow it). */
  private pausedStreamOf(pattern: string): string {
    if (typeof pattern !== 'string' || pattern === '') throw new RedisStreamsOptionError('pattern', `must be a non-empty string, got ${describe(pattern)}`);
    return streamKeyFor(pattern, this.options.streamPrefix);
  }

  /** Stops the pause watch and gives back global-concurrency permits; bounded, as every Redis step of close(). */
  private async stopFlow(): Promise<void> {
    try {
      await withTimeout(this.parts?.flow.stop() ?? Promise.resolve(), FLOW_STOP_TIMEOUT_MS, 'giving back global-concurrency permits');
    } catch (error) {
      this.logger.warn(`${errorMessage(error)}; they come back when this worker's lease runs out`);
    }
  }

  private useProcessingHooks(): ProcessingHooks {
    this.hooks.processing ??= new ProcessingHooks(
      () => this.transportId,
      (error) => this.events.error(error),
    );
    return this.hooks.processing;
  }

  // ---- startup ----

  private async start(): Promise<void> {
    if (this.state !== 'idle') throw new Error(`RedisStreamsServer cannot listen: it is ${this.state}`);
    this.state = 'starting';
    try {
      await this.open(await Telemetry.load(this.options.telemetry));
    } catch (error) {
      // close() during start-up ends the connections, which fails the wait for them: say why.
      const closedMeanwhile = (this.state as string) !== 'starting';
      // Nothing may keep reconnecting after a failed listen() (the process could not exit).
      await this.connections.close();
      this.state = 'closed';
      throw closedMeanwhile ? new Error('RedisStreamsServer was closed while it started listening', { cause: error }) : error;
    }
    // close() ran while the groups were being created: it closed the connections; start nothing.
    if ((this.state as string) !== 'starting') throw new Error('RedisStreamsServer was closed while it started listening');
    const { readers, telemetry, recovery, flow } = this.parts as ServerParts;
    // The pause state is read before the first read: a paused group is not read at start-up.
    await flow.start();
    if ((this.state as string) !== 'starting') throw new Error('RedisStreamsServer was closed while it started listening');
    this.state = 'listening';
    // Not waited for: it loads on a thread of its own; renewals run on the event loop in any case.
    recovery.startLeaseThread();
    for (const reader of readers) reader.start();
    recovery.start();
    this.startPromotion();
    if (telemetry !== undefined) this.observation.observe(telemetry, this.commandConnection());
    listeningServers.add(this);
  }

  /** Every worker promotes the due delayed entries of the streams it reads (docs/scheduling.md). */
  private startPromotion(): void {
    const { delayed } = this.options;
    if (delayed === undefined) return;
    const streams = promotedStreams(this.parts as ServerParts);
    const promoter = new DelayedPromoter(this.commandConnection(), streams, delayed, this.logger, (error) => this.events.error(error));
    this.promoter = promoter;
    // A hold due before the next round wakes it (docs/scheduling.md, "Wake-up").
    const wake = this.connections.delayedWake;
    if (wake === undefined) {
      promoter.start();
      return;
    }
    // The listener's subscription (or its refusal) runs the first round; the interval bounds the wait for it.
    promoter.start(delayed.intervalMs);
    this.wakeListener = new DelayedWakeListener(wake, streams, (inMs) => promoter.wake(inMs), this.logger, () => this.connections.endDelayedWake());
    this.wakeListener.start();
  }

  /** Builds the parts (server-parts.ts), then waits for the connection and creates the groups. */
  private async open(telemetry: Telemetry | undefined): Promise<void> {
    this.parts = buildServerParts({
      options: this.options,
      logger: this.logger,
      events: this.events,
      decoders: this.decoders,
      handlers: this.getHandlers(),
      connections: this.connections,
      hooks: this.hooks,
      telemetry,
      requests: { replies: this.replies, handlerFor: (pattern: string) => this.getHandlerByPattern(pattern), serialize: serializeWith(this.serializer) },
      emitRecovery: (event, payload) => this.events.emit(event, payload),
      recoveryLogger: new RedactingLogger('RedisStreamsRecovery', this.redactor),
      state: () => this.state,
      capabilities: () => this.capabilities,
    });
    const { bindings } = this.parts;
    // Opened with the others (it connects while they do, and counts in `status` from the start); subscribed once listening.
    if (this.options.delayed !== undefined && promotedStreams(this.parts).length > 0) this.connections.openDelayedWake();
    await this.connections.ready(bindings);
    if (bindings.length === 0) this.logger.warn('no handlers are bound to this server; it reads nothing');
  }

  private async drain({ slots, lanes, acker, retries, handling }: ServerParts): Promise<void> {
    const { consumer, handoffConsumer, shutdownTimeout } = this.options;
    const commands = this.commandConnection();
    const { logger, events } = this;
    await drain({
      slots,
      lanes,
      acker,
      retries,
      commands,
      consumer,
      handoffConsumer,
      shutdownTimeout,
      logger,
      events,
      streams: handling.streams,
      aborts: handling.aborts,
      takeHeldEntries: () => handling.takeHeldEntries(),
    });
  }
}

/** The streams a worker promotes the delayed entries of: every stream it reads, once. */
function promotedStreams(parts: ServerParts): string[] {
  return [...new Set(parts.bindings.map((binding) => binding.stream))];
}
