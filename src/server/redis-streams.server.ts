import { Logger } from '@nestjs/common';
import {
  Server,
  type ConsumerDeserializer,
  type CustomTransportStrategy,
  type MessageHandler,
  type MsPattern,
} from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { JsonStreamDeserializer, type DecodedEntry, type StreamDeserializer } from '../codec/stream-deserializer.js';
import { RedisStreamsDecodeError } from '../errors.js';
import {
  CapabilityWatch,
  describeCapabilities,
  requireCommands,
  SERVER_COMMANDS,
  type RedisStreamsCapabilities,
} from '../redis/capabilities.js';
import { closeConnection, describeConnection, isClusterConnectionOption, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { checkSameSlot, deadLetterKeysOf } from '../redis/slot-check.js';
import { whenReady } from '../redis/ready.js';
import { AckBatcher } from './ack-batcher.js';
import { IdempotencyRecords } from './idempotency.js';
import { ackDeletePolicies, serverRequirements, type AckDeletePolicy } from './ack-policy.js';
import { requireCapabilities } from '../redis/capability-requirements.js';
import { listeningServers, livenessOf, type RedisStreamsLiveness } from './liveness.js';
import { ConnectionStatusTracker, type RedisStreamsStatus } from './connection-status.js';
import { StreamReader, type ReaderHost } from './consumer-loop.js';
import { RedisStreamsContext, type EntrySettler } from './context.js';
import { Dispatcher } from './dispatcher.js';
import { planPrefetch } from './flow-control.js';
import { createGroup, errorMessage } from './groups.js';
import { drain, stopReading } from './drain.js';
import {
  bindHandlers,
  bindingKey,
  describeBinding,
  groupBindingsForReaders,
  keepEarlierEventHandlers,
  type HandledStream,
  type StreamBinding,
} from './handler-binding.js';
import type { InFlightEntry, IncomingEntry } from './in-flight.js';
import { resolveServerOptions, type RedisStreamsServerOptions, type ResolvedServerOptions } from './options.js';
import { ReplyWriter } from './reply-writer.js';
import { handleRequest, serializeWith, type DecodedRequest, type RequestHost } from './request-handling.js';
import { RetryReleaser } from './retry-releaser.js';
import { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import { MAX_TIMER_MS } from '../validation.js';
import { Redactor } from '../redaction.js';
import { RedactingLogger } from '../redacting-logger.js';
import { Telemetry } from '../telemetry/telemetry.js';
import { GroupGauges } from '../telemetry/group-gauges.js';
import { deadLetterKey } from '../redis/keys.js';
import { captureHandlerErrors } from './handler-error-capture.js';
import { ServerEventEmitter, type RedisStreamsServerEvents } from './server-events.js';
import { runBatch, type BatchHost } from './batch/batch-runner.js';

/** Transport id of this server: `@EventPattern('x', REDIS_STREAMS_TRANSPORT)` binds a handler to it only. */
export const REDIS_STREAMS_TRANSPORT = Symbol.for('nestjs-redis-streams');

export type { RedisStreamsServerEvents } from './server-events.js';

/** Connections behind `unwrap()`. */
export interface RedisStreamsConnections {
  /** Acks, replies, group creation, handoff. */
  readonly commands: RedisClient;
  /** One blocking reader connection per consumer group. */
  readonly readers: readonly RedisClient[];
}

/** Renews the lease of an in-flight entry; installed by a recovery provider. @internal */
export type LeaseExtender = (entry: { stream: string; group: string; id: string }, ms: number | undefined) => Promise<void>;

/**
 * NestJS transport strategy for Redis Streams. Every `@EventPattern` / `@MessagePattern` handler
 * reads its own stream (`streamPrefix + pattern`) through a consumer group; entries are acked only after
 * the handler succeeded. See docs/server.md.
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
  private readonly decoder: StreamDeserializer;
  /** The decoder when it is exactly the default one (not a subclass overriding `deserialize`). */
  private readonly defaultDecoder: JsonStreamDeserializer | undefined;
  private readonly events: ServerEventEmitter;
  private state: 'idle' | 'starting' | 'listening' | 'closing' | 'closed' = 'idle';
  private commands: OpenedConnection | undefined;
  private readerConnections: OpenedConnection[] = [];
  private readers: StreamReader[] = [];
  private bindings: StreamBinding[] = [];
  private readonly bindingsByKey = new Map<string, StreamBinding>();
  private dispatcher: Dispatcher | undefined;
  private acker: AckBatcher | undefined;
  private retries: RetryReleaser | undefined;
  private statusTracker: ConnectionStatusTracker | undefined;
  private leaseExtender: LeaseExtender | undefined;
  private recovery: RecoveryScheduler | undefined;
  /** Set at listen() only when OpenTelemetry is there and on: every per-entry hook tests this one reference. */
  private telemetry: Telemetry | undefined;
  /** Built at listen(), once telemetry is known. */
  private requests: RequestHost | undefined;
  private gauges: GroupGauges | undefined;
  private capabilityWatch: CapabilityWatch | undefined;
  private deletePolicyOf: (binding: StreamBinding) => AckDeletePolicy | undefined = () => undefined;
  private records: IdempotencyRecords | undefined;
  private batches: BatchHost | undefined;
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
    this.decoder = options.deserializer ?? new JsonStreamDeserializer();
    this.defaultDecoder = this.decoder.constructor === JsonStreamDeserializer ? (this.decoder as JsonStreamDeserializer) : undefined;
    this.initializeSerializer(options);
    this.initializeDeserializer({ deserializer: this.decoder as unknown as ConsumerDeserializer });
    captureHandlerErrors();
  }

  /** The consumer name this server reads as. */
  get consumer(): string {
    return this.options.consumer;
  }

  /** What the Redis server supports, probed at `listen()` and after every reconnect; `undefined` before. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.capabilityWatch?.capabilities;
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
      if (wasRunning) await this.stopReading();
      await this.recovery?.stopTicks();
      if (wasRunning) await this.drain();
    } finally {
      await this.recovery?.stop();
      this.gauges?.stop();
      await this.closeConnections();
      this.state = 'closed';
      if (wasRunning) this._status$.next('disconnected');
    }
  }

  private async closeConnections(): Promise<void> {
    this.statusTracker?.stop();
    this.capabilityWatch?.stop();
    await Promise.all(this.readerConnections.map((opened) => closeConnection(opened)));
    await closeConnection(this.commands);
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

  /** `{ commands, readers }`: the ioredis clients this server uses. Only after `listen()`. */
  unwrap<T = RedisStreamsConnections>(): T {
    if (this.commands === undefined) {
      throw new Error('Not initialized. Please call the "listen"/"startAllMicroservices" method before accessing the server.');
    }
    const connections: RedisStreamsConnections = {
      commands: this.commands.client,
      readers: this.readerConnections.map((opened) => opened.client),
    };
    return connections as T;
  }

  /** A snapshot for health checks: connections, read loops, prefetch, recovery ticks (see docs/observability.md). No Redis command. */
  liveness(): RedisStreamsLiveness {
    const stats = this.recovery?.stats();
    return livenessOf({
      consumer: this.options.consumer,
      state: this.state,
      blockMs: this.options.blockMs,
      prefetch: this.dispatcher?.prefetchSize ?? this.options.prefetch,
      commands: this.commands?.client,
      readers: this.readers,
      streams: this.bindings.map(({ stream, group }) => ({
        stream,
        group,
        deadLetterKey: this.recovery?.deadLetterKeyFor(stream) ?? (this.options.recovery.deadLetterKey ?? deadLetterKey)(stream),
      })),
      freeSlots: this.dispatcher?.freeSlots() ?? 0,
      inFlight: this.dispatcher?.inFlightCount() ?? 0,
      recovery: stats === undefined ? null : { scheduled: this.options.recovery.enabled, ticks: stats.ticks, failedTicksInARow: stats.failedTicksInARow, lastTickAt: stats.lastTickAt, lastError: stats.lastError },
    });
  }

  // ---- @internal API for recovery (claim, leases, dead letters); not exported from index.ts ----

  /** @internal Bytes of the fetched-but-unacked entries, now and at most so far, and the caps (tests, sizing). */
  prefetchUsage(): { heldBytes: number; peakHeldBytes: number; prefetch: number; maxPrefetchBytes: number } {
    const bytes = this.dispatcher?.bytesHeld() ?? { held: 0, peak: 0 };
    const prefetch = this.dispatcher?.prefetchSize ?? this.options.prefetch;
    return { heldBytes: bytes.held, peakHeldBytes: bytes.peak, prefetch, maxPrefetchBytes: this.options.maxPrefetchBytes };
  }

  /** @internal Prefetch slots free now (not held by entries nor reserved by a read or claim). */
  freePrefetchSlots(): number {
    return this.dispatcher?.freeSlots() ?? 0;
  }

  /**
   * @internal Reserves up to `max` prefetch slots for entries a claim (XCLAIM/XAUTOCLAIM) is about
   * to take. A blocking read may hold every free slot while it waits on idle streams: it is
   * interrupted (CLIENT UNBLOCK) and its slots go to the claim first, waiting at most `waitMs`.
   * Claim at most the returned count, then pass it to `dispatchEntries(…, reserved)` (or give
   * it back with `releasePrefetchSlots`).
   */
  async reservePrefetchSlots(max: number, waitMs = 250): Promise<number> {
    const dispatcher = this.dispatcher;
    if (dispatcher === undefined || this.state !== 'listening' || max <= 0) return 0;
    // Slots held by entries come back only as handlers finish: not worth waiting for. Slots
    // reserved by reads come back soon (a blocked read is made to return now). Counted before
    // our own reservation, which is no read to wait for.
    const reservedByOthers = dispatcher.reservedCount();
    const now = dispatcher.reserveNow(max);
    if (now >= max || reservedByOthers === 0) return now;
    const later = dispatcher.reserveLater(max - now);
    const timer = setTimeout(later.cancel, waitMs);
    await Promise.all(this.readers.map((reader) => reader.interrupt()));
    const more = await later.reserved;
    clearTimeout(timer);
    return now + more;
  }

  /** @internal Gives back slots from `reservePrefetchSlots` that no entry used. */
  releasePrefetchSlots(count: number): void {
    if (count > 0) this.dispatcher?.unreserve(count);
  }

  /** @internal Whether this process holds (queued, running or awaiting its ack) that entry. */
  isInFlight(stream: string, group: string, id: string): boolean {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    return binding !== undefined && (this.dispatcher?.has(binding, id) ?? false);
  }

  /**
   * @internal Hands claimed entries to the handlers through the same accounting as reads
   * (prefetch, concurrency, ack). `reserved`: slots from `reservePrefetchSlots`, released here
   * once the entries hold theirs. An entry already in flight here is skipped. Returns how many
   * entries were new.
   */
  dispatchEntries(stream: string, group: string, entries: readonly IncomingEntry[], reserved = 0): number {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    const dispatcher = this.dispatcher;
    if (binding === undefined || dispatcher === undefined) {
      throw new Error(`no handler of this server reads stream "${stream}" with group "${group}"`);
    }
    let admitted = 0;
    // While closing (before the handoff: close() waits for the tick that claimed them) they are
    // queued without starting, and handed off with the other unstarted entries.
    if (this.state === 'listening' || this.state === 'closing') {
      const before = dispatcher.inFlightCount();
      dispatcher.admit(binding, entries);
      admitted = dispatcher.inFlightCount() - before;
      this.telemetry?.consumed(stream, group, admitted);
    }
    // After admit: the entries now hold slots, so giving the reservation back frees nothing twice.
    if (reserved > 0) dispatcher.unreserve(reserved);
    return admitted;
  }

  /** @internal Every stream + group this server reads, with the handler's options. */
  handledStreams(): HandledStream[] {
    return this.bindings.map(describeBinding);
  }

  /**
   * @internal Ids this process still works on for a stream + group (lease renewal): held, and
   * neither acked, nacked nor being handed off.
   */
  inFlightIds(stream: string, group: string): string[] {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    if (binding === undefined || this.dispatcher === undefined) return [];
    return this.dispatcher.unsettledIdsOf(binding);
  }

  /** @internal Work-queue mode: the XACKDEL policy of a stream + group (dead-letter moves delete the same way). */
  deletePolicyFor(stream: string, group: string): AckDeletePolicy | undefined {
    const binding = this.bindingsByKey.get(bindingKey(stream, group));
    return binding === undefined ? undefined : this.deletePolicyOf(binding);
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
    this.leaseExtender = extender;
  }

  // ---- EntrySettler (RedisStreamsContext) ----

  ack(entry: InFlightEntry): Promise<void> {
    if (entry.settled) return entry.acked ?? Promise.resolve();
    if (this.acker === undefined || this.state === 'closed') {
      const error = new Error(`cannot ack entry ${entry.id} of "${entry.binding.stream}": the server is closed; it stays pending`);
      this.logger.warn(error.message);
      return handledRejection(error);
    }
    entry.settled = true;
    this.dispatcher?.markReturning(entry);
    this.telemetry?.acked(entry.binding.stream, entry.binding.group);
    entry.acked = this.acker.add(entry);
    return entry.acked;
  }

  nack(entry: InFlightEntry): void {
    if (entry.settled) return;
    entry.settled = true;
    this.dispatcher?.release(entry);
  }

  extendLease(entry: InFlightEntry, ms: number | undefined): Promise<void> {
    if (this.leaseExtender === undefined) return Promise.resolve();
    return this.leaseExtender({ stream: entry.binding.stream, group: entry.binding.group, id: entry.id }, ms);
  }

  // ---- startup ----

  private async start(): Promise<void> {
    if (this.state !== 'idle') throw new Error(`RedisStreamsServer cannot listen: it is ${this.state}`);
    this.state = 'starting';
    try {
      this.telemetry = await Telemetry.load(this.options.telemetry);
      this.requests = this.requestHost();
      await this.open();
    } catch (error) {
      // close() during start-up ends the connections, which fails the wait for them: say why.
      const closedMeanwhile = (this.state as string) !== 'starting';
      // Nothing may keep reconnecting after a failed listen() (the process could not exit).
      await this.closeConnections();
      this.state = 'closed';
      throw closedMeanwhile ? new Error('RedisStreamsServer was closed while it started listening', { cause: error }) : error;
    }
    // close() ran while the groups were being created: it closed the connections; start nothing.
    if ((this.state as string) !== 'starting') throw new Error('RedisStreamsServer was closed while it started listening');
    this.state = 'listening';
    for (const reader of this.readers) reader.start();
    this.recovery = new RecoveryScheduler(this, this.options.recovery, (event, payload) => this.emit(event, payload));
    this.recovery.start();
    if (this.telemetry !== undefined) this.observe(this.telemetry);
    listeningServers.add(this);
  }

  /** Counts recovery's events and draws dead letters on their entries' traces; starts the gauges. */
  private observe(telemetry: Telemetry): void {
    const commands = this.commandConnection();
    this.on('deadLetter', (notice) => void telemetry.deadLettered(notice, commands));
    this.on('recovered', (notice) => telemetry.recovered(notice));
    this.on('entriesLost', (notice) => telemetry.lost(notice));
    const meter = telemetry.meter;
    if (meter !== undefined) {
      this.gauges = new GroupGauges(meter, commands, () => this.liveness().streams, this.options.telemetry.gaugeInterval);
    }
  }

  /** Validates the handlers, opens the connections and creates the groups. */
  private async open(): Promise<void> {
    const options = this.options;
    // Validate every handler's extras before the first command.
    const bindings = bindHandlers(this.getHandlers(), options);
    // Streams of one read must share a slot on a Cluster: one reader per group + hash slot there.
    const perSlot = isClusterConnectionOption(options.connection);
    const readerGroups = groupBindingsForReaders(bindings, perSlot);
    const plan = planPrefetch(options, readerGroups);
    this.bindings = bindings;
    for (const binding of bindings) this.bindingsByKey.set(binding.key, binding);
    // Keys one script touches together must share a slot: a named error now, not CROSSSLOT at the first dead letter.
    const deadLetterKeys = deadLetterKeysOf(bindings.map((b) => b.stream), options.recovery.deadLetterKey ?? deadLetterKey, 'recovery.deadLetterKey');
    checkSameSlot(deadLetterKeys, perSlot, (message) => this.logger.warn(message));

    // Not auto-pipelined: ioredis would send pipelined commands after direct ones of the same turn.
    this.commands = openConnection(options.connection, 'server');
    const commands = this.commands.client;
    this.dispatcher = new Dispatcher(plan.prefetch, options.concurrency, bindings, this.startEntry, options.maxPrefetchBytes, this.startBatch);
    const deletePolicies = ackDeletePolicies(bindings, options.workQueue);
    // Work-queue mode only while the server has XACKDEL (a failover may land on an older one: plain XACK then).
    this.deletePolicyOf = (binding) => (this.capabilities?.xackdel === true ? deletePolicies.get(binding) : undefined);
    this.records = new IdempotencyRecords(commands);
    this.acker = new AckBatcher(commands, this.releaseEntry, (error) => this.emitError(error), undefined, this.deletePolicyOf, (binding) =>
      this.recreateGroups([binding]), this.records,
    );
    const dispatcher = this.dispatcher;
    const slots = { markReturning: (entry: InFlightEntry) => dispatcher.markReturning(entry), release: this.releaseEntry };
    this.retries = new RetryReleaser(commands, options.consumer, options.recovery, slots, (error) => this.emitError(error), this.logger);
    this.statusTracker = new ConnectionStatusTracker((status) => this._status$.next(status));
    this.statusTracker.watch(commands);
    if (this.commands.owned) commands.on('error', this.onConnectionError);

    const host = this.readerHost(commands);
    for (const [index, group] of readerGroups.entries()) {
      const first = group[0] as StreamBinding;
      const opened = openConnection(
        options.connection,
        `server-reader:${first.group}`,
        {
          // A read waits for the reconnect instead of failing; the watchdog frees a read Redis never answers.
          maxRetriesPerRequest: null,
          blockingTimeout: Math.min(MAX_TIMER_MS, options.blockMs + 10_000),
          blockingTimeoutGrace: 5_000,
          // A Cluster's ready check asks a random node: one more connection per reader for nothing.
          ...(perSlot ? { enableReadyCheck: false } : {}),
        },
        true,
      );
      opened.client.on('error', this.onConnectionError);
      this.readerConnections.push(opened);
      this.statusTracker.watch(opened.client);
      this.readers.push(new StreamReader(first.group, group, opened.client, host, plan.shares[index] as number));
    }
    // Fail listen() within startupTimeout (at once on wrong credentials) rather than retry forever.
    // The readers use the same address and credentials; they connect on their first read.
    await whenReady(commands, options.startupTimeout, describeConnection(options.connection));
    this.capabilityWatch = new CapabilityWatch(commands, this.onCapabilities, (error) =>
      this.logger.debug?.(`capability probe after a reconnect failed: ${errorMessage(error)}`),
    );
    // The probe and the group creations go out together: listen() costs no extra round trip.
    const probed = this.capabilityWatch.start();
    const created = Promise.all(bindings.map((binding) => createGroup(commands, binding.stream, binding.group, binding.startId)));
    const [capabilities] = await Promise.allSettled([probed, created]);
    // A server lacking a command or a capability an option needs fails here, naming it (before a
    // group error it may cause).
    if (capabilities.status === 'fulfilled') {
      requireCommands(capabilities.value, SERVER_COMMANDS, 'RedisStreamsServer');
      requireCapabilities(capabilities.value, serverRequirements(options));
    }
    await Promise.all([probed, created]);
    if (bindings.length === 0) this.logger.warn('no handlers are bound to this server; it reads nothing');
  }

  private readerHost(commands: RedisClient): ReaderHost {
    const { options } = this;
    return {
      consumer: options.consumer,
      blockMs: options.blockMs,
      readBatch: options.readBatch,
      reconnectInitialMs: options.reconnectInitialMs,
      reconnectMaxMs: options.reconnectMaxMs,
      dispatcher: this.dispatcher as Dispatcher,
      commands,
      logger: this.logger,
      deliver: (binding, entries, reReadAt) => this.admitRead(binding, entries, reReadAt),
      slotsReturning: () => this.dispatcher?.slotsReturning() ?? false,
      dropDeleted: (binding, ids) => this.dropDeleted(binding, ids),
      recreateGroups: (bindings) => this.recreateGroups(bindings),
    };
  }

  // ---- handling one entry ----

  private readonly startEntry = (entry: InFlightEntry): void => {
    void this.handleEntry(entry);
  };

  /** A batch binding's batch (`extras.batch`): batch/batch-runner.ts runs and settles it. */
  private readonly startBatch = (entries: InFlightEntry[]): void => {
    this.batches ??= this.batchHost();
    runBatch(this.batches, entries);
  };

  /** What batch handlers use of this server: the single-entry paths' decode, ack, failure and lease steps. */
  private batchHost(): BatchHost {
    return {
      consumer: this.options.consumer,
      decoder: this.decoder,
      defaultDecoder: this.defaultDecoder,
      logger: this.logger,
      undecodable: async (entry, error) => {
        this.reportDecodeError(entry, error);
        await this.recovery?.deadLetterUndecodable(entry.binding.stream, entry.binding.group, entry.id, error);
        this.nack(entry);
      },
      finished: (entries) => this.dispatcher?.batchFinished(entries),
      succeeded: (entry) => (this.state === 'closed' ? this.nack(entry) : void this.ack(entry)),
      failed: (entry, error) => {
        this.recovery?.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error);
        // With a retry policy the entry goes to the retry consumer for its backoff, as a single entry would.
        if (this.state === 'closed' || !this.retries?.release(entry, error)) this.nack(entry);
      },
      extendLease: (entry) => this.extendLease(entry, undefined),
    };
  }

  private readonly releaseEntry = (entry: InFlightEntry): void => {
    this.dispatcher?.release(entry);
  };

  /**
   * Decodes and runs one entry. The usual path (default or raw format, a handler returning a
   * promise or a value) has no async function of its own: Nest's handler (guards, interceptors,
   * pipes, filters) is the only pipeline per entry.
   */
  private handleEntry(entry: InFlightEntry): void {
    const { binding } = entry;
    let decoded: DecodedEntry;
    if (binding.raw) decoded = { data: entry.rawFields() };
    else if (this.defaultDecoder !== undefined) {
      try {
        // The default format reads its few fields straight from the reply: no field map per entry.
        const flat = entry.flatFields();
        decoded = flat !== undefined ? this.defaultDecoder.decodeFlat(flat) : this.defaultDecoder.decodeFields(entry);
      } catch (error) {
        void this.failDecode(entry, error);
        return;
      }
    } else {
      void this.decodeThenHandle(entry);
      return;
    }
    this.handleDecoded(entry, decoded);
  }

  private async decodeThenHandle(entry: InFlightEntry): Promise<void> {
    let decoded: DecodedEntry;
    try {
      const result = this.decoder.deserialize(entry.fields, { stream: entry.binding.stream, id: entry.id });
      // A sync decoder costs no extra turn of the microtask queue.
      decoded = result instanceof Promise ? await result : result;
    } catch (error) {
      await this.failDecode(entry, error);
      return;
    }
    this.handleDecoded(entry, decoded);
  }

  private async failDecode(entry: InFlightEntry, error: unknown): Promise<void> {
    const { binding } = entry;
    this.reportDecodeError(entry, error);
    // Undecodable now means undecodable on every delivery: dead-letter it at once (the slot is
    // held until the move is done; if it fails, the entry stays pending).
    await this.recovery?.deadLetterUndecodable(binding.stream, binding.group, entry.id, error);
    this.finish(entry, false);
  }

  private handleDecoded(entry: InFlightEntry, decoded: DecodedEntry): void {
    if (this.telemetry !== undefined) {
      // The handler runs inside the entry's process span, so the user's own spans nest under it.
      this.telemetry.process(entry, decoded.headers, this.options.consumer, () => this.runDecoded(entry, decoded));
      return;
    }
    this.runDecoded(entry, decoded);
  }

  private runDecoded(entry: InFlightEntry, decoded: DecodedEntry, checked = false): void {
    const { binding } = entry;
    const pattern = decoded.pattern ?? binding.pattern;
    const context = new RedisStreamsContext(entry, this.options.consumer, pattern, decoded.headers, this);
    // Only a message binding answers. To an event binding (another group reading the same stream,
    // an audit trail) a request is an event: its handler gets the payload and nothing is replied.
    if (!binding.raw && !binding.isEventHandler && decoded.id !== undefined && decoded.replyTo !== undefined) {
      void handleRequest(this.requests as RequestHost, entry, decoded as DecodedRequest, pattern, context);
      return;
    }
    if (binding.idempotency !== undefined && !checked) {
      this.runIfNotProcessed(entry, decoded, context);
      return;
    }
    let result: unknown;
    try {
      result = binding.handler(decoded.data, context);
    } catch (error) {
      this.eventFailed(entry, error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value: unknown) => this.eventReturned(entry, value),
        (error: unknown) => this.eventFailed(entry, error),
      );
      return;
    }
    this.eventReturned(entry, result);
  }

  /** `extras.idempotency`: an entry whose key is recorded is acknowledged (in any ack mode) without running the handler. */
  private runIfNotProcessed(entry: InFlightEntry, decoded: DecodedEntry, context: RedisStreamsContext): void {
    (this.records as IdempotencyRecords).processed(entry, decoded.data, context).then(
      (processed) => {
        if (!processed) return this.runDecoded(entry, decoded, true);
        this.logger.debug?.(`entry ${entry.id} of "${entry.binding.stream}" was processed already (idempotency record): acknowledged without running the handler`);
        this.dispatcher?.finished(entry);
        this.telemetry?.finished(entry, true);
        void this.ack(entry);
      },
      (error: unknown) => {
        this.emitError(new Error(`idempotency check of entry ${entry.id} of "${entry.binding.stream}" failed; it stays pending: ${errorMessage(error)}`));
        this.finish(entry, false);
      },
    );
  }

  private eventReturned(entry: InFlightEntry, value: unknown): void {
    if (!isObservable(value)) {
      this.finish(entry, true);
      return;
    }
    lastValueFrom(value, { defaultValue: undefined }).then(
      () => this.finish(entry, true),
      (error: unknown) => this.eventFailed(entry, error),
    );
  }

  private eventFailed(entry: InFlightEntry, filtered: unknown): void {
    // The handler's own error, not the "Internal server error" Nest's exception filter made of it.
    const error = entry.handlerError ?? filtered;
    this.reportHandlerError(entry, error);
    // With a retry policy the entry goes to the retry consumer for its backoff (its slot comes back then).
    if (this.state !== 'closed' && this.retries?.release(entry, error)) {
      this.telemetry?.finished(entry, false);
      this.dispatcher?.finished(entry);
    } else this.finish(entry, false);
  }

  /** What request handling (request-handling.ts) uses of this server. */
  private requestHost(): RequestHost {
    const host: RequestHost = {
      replies: this.replies,
      telemetry: this.telemetry,
      handlerFor: (pattern) => this.getHandlerByPattern(pattern),
      serialize: serializeWith(this.serializer),
      recordHandlerError: (entry, error) => this.recovery?.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error),
      emitError: (error) => this.emitError(error),
      finish: (entry, succeeded) => this.finish(entry, succeeded),
      ackUnanswerable: (entry) => {
        this.dispatcher?.finished(entry);
        this.telemetry?.finished(entry, true);
        void this.ack(entry);
      },
    };
    return host;
  }

  /** Handler slot back; then ack (auto mode, success), release (failure) or wait for ack()/nack() (manual). */
  private finish(entry: InFlightEntry, succeeded: boolean): void {
    this.dispatcher?.finished(entry);
    this.telemetry?.finished(entry, succeeded);
    if (entry.settled) return;
    if (!succeeded || this.state === 'closed') {
      entry.settled = true;
      this.dispatcher?.release(entry);
      return;
    }
    if (entry.binding.ackMode === 'auto') void this.ack(entry);
  }

  private reportDecodeError(entry: InFlightEntry, error: unknown): void {
    const decodeError =
      error instanceof RedisStreamsDecodeError
        ? error
        : new RedisStreamsDecodeError(entry.binding.stream, entry.id, errorMessage(error));
    this.logger.error(`${decodeError.message}; moving it to the dead-letter stream`);
    this.emit('decodeError', decodeError);
  }

  private reportHandlerError(entry: InFlightEntry, error: unknown): void {
    const { binding } = entry;
    const detail = error instanceof Error ? error.message : safeJson(error);
    this.telemetry?.failed(entry, error);
    this.recovery?.recordHandlerError(binding.stream, binding.group, entry.id, error);
    this.logger.error(
      `handler of "${binding.pattern}" failed on entry ${entry.id} of "${binding.stream}" (group "${binding.group}", delivery ${entry.deliveryCount}); it stays pending: ${detail}`,
    );
  }

  /**
   * Entries from a read. A re-read of this consumer's own pending list (a restart under the same
   * name) raises their Redis delivery count: past the limit they are dead-lettered, not run again
   * (only if idle since the re-read: an entry claimed or renewed meanwhile is someone's work).
   */
  private admitRead(binding: StreamBinding, entries: IncomingEntry[], reReadAt?: number): void {
    this.telemetry?.consumed(binding.stream, binding.group, entries.length);
    const limit = binding.maxDeliveries ?? this.options.recovery.maxDeliveries;
    const exhausted = entries.filter((entry) => entry.deliveryCount > limit);
    if (exhausted.length === 0) {
      this.dispatcher?.admit(binding, entries);
      return;
    }
    this.dispatcher?.admit(binding, entries.filter((entry) => entry.deliveryCount <= limit));
    // Redis reset their idle time at the re-read, before `reReadAt`: less idle now means touched since.
    const idleSinceReRead = reReadAt === undefined ? 0 : Math.max(0, Date.now() - reReadAt - 1);
    void this.recovery?.deadLetterExhausted(binding.stream, binding.group, exhausted.map((entry) => entry.id), idleSinceReRead);
  }

  // ---- recovery of the reading side ----

  private async recreateGroups(bindings: readonly StreamBinding[]): Promise<void> {
    const commands = this.commandConnection();
    for (const binding of bindings) {
      // Never `$`: entries written between the loss and now must not be skipped.
      if (await createGroup(commands, binding.stream, binding.group, '0')) {
        this.logger.warn(`recreated group "${binding.group}" on "${binding.stream}" at 0`);
        this.emit('groupRecreated', { stream: binding.stream, group: binding.group });
      }
    }
  }

  /** Own-PEL ids whose entry is gone: acked away, counted and reported by recovery (once, also if a tick found them too). */
  private dropDeleted(binding: StreamBinding, ids: string[]): void {
    this.recovery
      ?.ackLost(binding.stream, binding.group, ids)
      .catch((error: unknown) => this.emitError(new Error(`XACK of deleted entries failed; they stay pending: ${errorMessage(error)}`)));
  }

  // ---- shutdown ----

  private async stopReading(): Promise<void> {
    await stopReading(this.dispatcher as Dispatcher, this.readers);
  }

  private async drain(): Promise<void> {
    const { options } = this;
    await drain({
      dispatcher: this.dispatcher as Dispatcher,
      commands: this.commandConnection(),
      consumer: options.consumer,
      handoffConsumer: options.handoffConsumer,
      shutdownTimeout: options.shutdownTimeout,
      acker: this.acker,
      retries: this.retries,
      logger: this.logger,
      events: this.events,
    });
  }

  // ---- events ----

  /** Logged once per distinct result; a reconnect to a server lacking a command we need is an error. */
  private readonly onCapabilities = (capabilities: RedisStreamsCapabilities): void => {
    this.logger.debug?.(describeCapabilities(capabilities));
    if (this.state !== 'listening') return;
    try {
      requireCommands(capabilities, SERVER_COMMANDS, 'RedisStreamsServer');
      requireCapabilities(capabilities, serverRequirements(this.options));
    } catch (error) {
      this.emitError(error as Error);
    }
  };

  private readonly onConnectionError = (error: Error): void => {
    // ioredis reports every failed reconnect; the status events tell the story, so log at debug.
    this.logger.debug?.(`connection error: ${error.message}`);
  };

  private emitError(error: Error): void {
    this.events.error(error);
  }

  private emit(event: string, ...args: unknown[]): void {
    this.events.emit(event, ...args);
  }
}

/** A rejected promise that is no unhandled rejection when its caller does not await it. */
function handledRejection(error: Error): Promise<never> {
  const rejected = Promise.reject(error);
  rejected.catch(() => undefined);
  return rejected;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
