import type { Logger } from '@nestjs/common';
import {
  Server,
  type ConsumerDeserializer,
  type CustomTransportStrategy,
  type MessageHandler,
  type MsPattern,
} from '@nestjs/microservices';
import { JsonStreamDeserializer, type StreamDeserializer } from '../codec/stream-deserializer.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import type { RedisClient } from '../redis/connection.js';
import type { LeaseExtender } from '../recovery/recovery-host.js';
import { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import { RedactingLogger } from '../redacting-logger.js';
import { Redactor } from '../redaction.js';
import { Telemetry } from '../telemetry/telemetry.js';
import type { AckDeletePolicy } from './ack-policy.js';
import type { RedisStreamsStatus } from './connection-status.js';
import type { EntrySettler } from './context.js';
import { DelayedPromoter } from './delayed-promoter.js';
import { drain, stopReading } from './drain.js';
import { EntryHandling } from './entry-handling.js';
import { keepEarlierEventHandlers, type HandledStream } from './handler-binding.js';
import { captureHandlerErrors } from './handler-error-capture.js';
import type { InFlightEntry, IncomingEntry } from './in-flight.js';
import { listeningServers, type RedisStreamsLiveness } from './liveness.js';
import { ProcessingHooks, type ProcessingEndHook, type ProcessingStartHook } from './processing-hooks.js';
import { resolveServerOptions, type RedisStreamsServerOptions, type ResolvedServerOptions } from './options.js';
import { RecoveryHooks } from './recovery-hooks.js';
import { ReplyWriter } from './reply-writer.js';
import { serializeWith } from './request-replies.js';
import { ServerConnections, type RedisStreamsConnections } from './server-connections.js';
import { ServerEventEmitter, type RedisStreamsServerEvents } from './server-events.js';
import { ServerObservation } from './server-observation.js';
import { buildServerParts, type ServerParts, type ServerState } from './server-parts.js';

/** Transport id of this server: `@EventPattern('x', REDIS_STREAMS_TRANSPORT)` binds a handler to it only. */
export const REDIS_STREAMS_TRANSPORT = Symbol.for('nestjs-redis-streams');

export type { RedisStreamsServerEvents } from './server-events.js';
export type { RedisStreamsConnections } from './server-connections.js';

/**
 * NestJS transport strategy for Redis Streams. Every `@EventPattern` / `@MessagePattern` handler
 * reads its own stream (`streamPrefix + pattern`) through a consumer group; entries are acked only after
 * the handler succeeded. See docs/server.md.
 *
 * The class Nest sees: its life cycle (listen, close) and the wiring of the parts, which do the
 * work: server-connections.ts (connections, capabilities), consumer-loop.ts (reads),
 * entry-handling.ts (one entry, decode to ack), request-handling.ts (replies), recovery-hooks.ts
 * (what recovery uses), drain.ts (shutdown), server-observation.ts (liveness, telemetry).
 */
export class RedisStreamsServer
  extends Server<RedisStreamsServerEvents, RedisStreamsStatus>
  implements CustomTransportStrategy, EntrySettler
{
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
  private readonly handling: EntryHandling;
  private readonly hooks: RecoveryHooks;
  /** Built at listen(). */
  private parts: ServerParts | undefined;
  private recovery: RecoveryScheduler | undefined;
  private promoter: DelayedPromoter | undefined;
  private readonly observation: ServerObservation;
  private readonly replies: ReplyWriter;
  /** Built when a processing hook is set: until then the per-entry path has no hook step at all. */
  private processingHooks: ProcessingHooks | undefined;

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
    this.handling = new EntryHandling({
      consumer: this.options.consumer,
      decoder,
      defaultDecoder: decoder.constructor === JsonStreamDeserializer ? (decoder as JsonStreamDeserializer) : undefined,
      logger: this.logger,
      events: this.events,
      isClosed: () => this.state === 'closed',
    });
    this.connections = new ServerConnections({
      options: this.options,
      logger: this.logger,
      reportStatus: (status) => this._status$.next(status),
      isListening: () => this.state === 'listening',
      emitError: (error) => this.events.error(error),
    });
    this.hooks = new RecoveryHooks(this.options, () => this.state, () => this.parts);
    this.observation = new ServerObservation({
      options: this.options,
      events: this.events,
      state: () => this.state,
      commands: () => this.connections.commands,
      parts: () => this.parts,
      recovery: () => this.recovery,
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
    listeningServers.delete(this);
    try {
      // Stop taking work: no handler starts, the readers stop, then recovery's ticks (entries of a
      // claim in flight are queued, so the handoff below gets them). Leases keep the running
      // handlers' entries until drained.
      if (wasRunning) await stopReading((this.parts as ServerParts).dispatcher, (this.parts as ServerParts).readers);
      await this.recovery?.stopTicks();
      this.promoter?.stop();
      if (wasRunning) await this.drain(this.parts as ServerParts);
    } finally {
      await this.recovery?.stop();
      this.observation.stop();
      await this.connections.close();
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

  // ---- @internal API for recovery (claim, leases, dead letters); not exported from index.ts. Documented in recovery-hooks.ts. ----

  /** @internal */
  prefetchUsage(): { heldBytes: number; peakHeldBytes: number; prefetch: number; maxPrefetchBytes: number } {
    return this.hooks.prefetchUsage();
  }
  /** @internal */
  freePrefetchSlots(): number {
    return this.hooks.freePrefetchSlots();
  }
  /** @internal */
  reservePrefetchSlots(max: number, waitMs?: number): Promise<number> {
    return this.hooks.reservePrefetchSlots(max, waitMs);
  }
  /** @internal */
  releasePrefetchSlots(count: number): void {
    this.hooks.releasePrefetchSlots(count);
  }
  /** @internal */
  isInFlight(stream: string, group: string, id: string): boolean {
    return this.hooks.isInFlight(stream, group, id);
  }
  /** @internal */
  dispatchEntries(stream: string, group: string, entries: readonly IncomingEntry[], reserved?: number): number {
    return this.hooks.dispatchEntries(stream, group, entries, reserved);
  }
  /** @internal */
  handledStreams(): HandledStream[] {
    return this.hooks.handledStreams();
  }
  /** @internal */
  inFlightIds(stream: string, group: string): string[] {
    return this.hooks.inFlightIds(stream, group);
  }
  /** @internal */
  deletePolicyFor(stream: string, group: string): AckDeletePolicy | undefined {
    return this.hooks.deletePolicyFor(stream, group);
  }
  /** @internal The consumer `close()` hands unstarted entries to. */
  handoffConsumerName(): string {
    return this.options.handoffConsumer;
  }
  /** @internal The command connection (after `listen()`). */
  commandConnection(): RedisClient {
    return this.unwrap<RedisStreamsConnections>().commands;
  }
  /** @internal Installed by a recovery provider to make `ctx.extendLease()` renew idle times. */
  setLeaseExtender(extender: LeaseExtender | undefined): void {
    this.handling.setLeaseExtender(extender);
  }

  // ---- EntrySettler: entry-handling.ts settles for the contexts ----

  ack(entry: InFlightEntry): Promise<void> {
    return this.handling.ack(entry);
  }
  nack(entry: InFlightEntry, delayMs?: number): void {
    this.handling.nack(entry, delayMs);
  }
  extendLease(entry: InFlightEntry, ms: number | undefined): Promise<void> {
    return this.handling.extendLease(entry, ms);
  }

  private useProcessingHooks(): ProcessingHooks {
    if (this.processingHooks === undefined) {
      this.processingHooks = new ProcessingHooks(
        () => this.transportId,
        (error) => this.events.error(error),
      );
      this.handling.useProcessingHooks(this.processingHooks);
    }
    return this.processingHooks;
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
    this.state = 'listening';
    const { readers, telemetry } = this.parts as ServerParts;
    for (const reader of readers) reader.start();
    this.recovery = new RecoveryScheduler(this, this.options.recovery, (event, payload) => this.events.emit(event, payload));
    this.handling.useRecovery(this.recovery);
    this.recovery.start();
    this.startPromotion();
    if (telemetry !== undefined) this.observation.observe(telemetry, this.commandConnection());
    listeningServers.add(this);
  }

  /** Every worker promotes the due delayed entries of the streams it reads (docs/scheduling.md). */
  private startPromotion(): void {
    const { delayed } = this.options;
    if (delayed === undefined) return;
    const streams = [...new Set((this.parts as ServerParts).bindings.map((binding) => binding.stream))];
    this.promoter = new DelayedPromoter(this.commandConnection(), streams, delayed, this.logger, (error) => this.events.error(error));
    this.promoter.start();
  }

  /** Builds the parts (server-parts.ts), then waits for the connection and creates the groups. */
  private async open(telemetry: Telemetry | undefined): Promise<void> {
    this.parts = buildServerParts({
      options: this.options,
      logger: this.logger,
      events: this.events,
      handlers: this.getHandlers(),
      connections: this.connections,
      handling: this.handling,
      telemetry,
      requests: { replies: this.replies, handlerFor: (pattern: string) => this.getHandlerByPattern(pattern), serialize: serializeWith(this.serializer) },
      capabilities: () => this.capabilities,
      recovery: () => this.recovery,
    });
    const { bindings } = this.parts;
    await this.connections.ready(bindings);
    if (bindings.length === 0) this.logger.warn('no handlers are bound to this server; it reads nothing');
  }

  private async drain({ dispatcher, acker, retries }: ServerParts): Promise<void> {
    const { consumer, handoffConsumer, shutdownTimeout } = this.options;
    const commands = this.commandConnection();
    const { logger, events, handling } = this;
    await drain({ dispatcher, acker, retries, commands, consumer, handoffConsumer, shutdownTimeout, logger, events, streams: handling.streams });
  }
}
