import { randomUUID } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import {
  ClientProxy,
  type ClientOptions,
  type ReadPacket,
  type WritePacket,
} from '@nestjs/microservices';
import { Observable, throwError } from 'rxjs';
import { decodeReply } from '../codec/reply.js';
import type { StreamFields } from '../codec/wire-format.js';
import {
  closeConnection,
  describeConnection,
  isClusterConnectionOption,
  openConnection,
  type OpenedConnection,
  type RedisClient,
} from '../redis/connection.js';
import {
  CapabilityWatch,
  CLIENT_COMMANDS,
  describeCapabilities,
  requireCommands,
  type RedisStreamsCapabilities,
} from '../redis/capabilities.js';
import { streamKeyFor } from '../redis/keys.js';
import { untilReady } from '../redis/ready.js';
import { batchThisTick } from '../redis/tick-batching.js';
import { MAX_TIMER_MS, timerMillisOption } from '../validation.js';
import { pushEntryFields, pushRawFields, validateHeaders, type OutgoingPacket } from './entry-fields.js';
import {
  NO_MESSAGE_HANDLER,
  RedisStreamsNoHandlerError,
  RedisStreamsPublishError,
  RedisStreamsTimeoutError,
} from './errors.js';
import { resolveClientOptions, type RedisStreamsClientOptions, type ResolvedClientOptions } from './redis-streams-client.options.js';
import { RedisStreamsRecord, type RedisStreamsRecordOptions } from './redis-streams-record.js';
import { ReplyListener } from './reply-listener.js';
import { ServerClock } from './server-clock.js';
import { compileTrimming, minIdArgs, type CompiledTrimming } from './trimming.js';
import { clientRequirements, trimmingUnsupported } from './capability-needs.js';
import { carriesIdmp, idmpArgs, sendWithRetries } from './idempotent-emit.js';
import { requireCapabilities } from '../redis/capability-requirements.js';
import { RedisStreamsConnectionError, RedisStreamsOptionError } from '../errors.js';
import { withTimeout } from '../timeout.js';
import { Redactor } from '../redaction.js';
import { RedactingLogger } from '../redacting-logger.js';
import { Telemetry, type ProducerTrace } from '../telemetry/telemetry.js';

export type RedisStreamsClientStatus = 'connected' | 'disconnected' | 'reconnecting';

/** ioredis events of the client's producer connection, passed through by `on()`. */
export type RedisStreamsClientEvents = {
  connect: () => void;
  ready: () => void;
  error: (error: Error) => void;
  close: () => void;
  reconnecting: (delayMs: number) => void;
  end: () => void;
};

type Args = (string | Buffer)[];
/** ioredis flattens array arguments: passing the list whole saves a copy per XADD. */
type XAdd = (args: Args) => Promise<string | null>;

/** `createPacket` (and the dispatch hook that sets `metadata`) exists from Nest 12 on. */
const createPacket = (ClientProxy.prototype as unknown as { createPacket?: (p: unknown, d: unknown) => ReadPacket })
  .createPacket;
const EMPTY_OPTIONS: RedisStreamsRecordOptions = Object.freeze({});
const noop = (): void => undefined;

/**
 * Nest `ClientProxy` for Redis Streams.
 * - `emit(pattern, data)`: one XADD to the pattern's stream (trimmed with `MAXLEN ~` by default);
 *   the Observable yields the new entry id. The XADDs of one tick share one socket write.
 * - `send(pattern, data)`: a request entry (`XADD … NOMKSTREAM`) whose reply comes back on this
 *   instance's private reply stream, matched by correlation id.
 */
export class RedisStreamsClient
  // Status stays `string` in the base type so the class fits `ClientsModule`'s `customClass`.
  extends ClientProxy<RedisStreamsClientEvents, string>
  implements OnApplicationShutdown
{
  /** Every log line, error and event passes the redactor: no password leaves the client. */
  protected readonly logger: Logger;
  private readonly redactor: Redactor;
  private readonly config: ResolvedClientOptions;
  /** One reply stream per client instance, so several instances of a service get only their own replies. */
  private readonly replyKey: string;
  /** No custom serializer: the packet is encoded straight into the XADD arguments. */
  private readonly identitySerializer: boolean;
  private producer: OpenedConnection | undefined;
  private xadd: XAdd | undefined;
  private connecting: Promise<RedisClient> | undefined;
  private generation = 0;
  private clock: ServerClock | undefined;
  private capabilityWatch: CapabilityWatch | undefined;
  private replies: { listener: ReplyListener; connection: OpenedConnection } | undefined;
  /** Set at connect() only when OpenTelemetry is there and on: emits test this one reference. */
  private telemetry: Telemetry | undefined;
  private readonly eventListeners: { event: string; callback: (...args: unknown[]) => void }[] = [];

  constructor(options: RedisStreamsClientOptions = {}) {
    super();
    this.config = resolveClientOptions(options);
    this.redactor = Redactor.for(this.config.connection);
    this.logger = new RedactingLogger(RedisStreamsClient.name, this.redactor);
    this.replyKey = `${this.config.replyPrefix}{${randomUUID()}}:replies`;
    this.identitySerializer = options.serializer === undefined;
    this.initializeSerializer(options as ClientOptions['options']);
    this.initializeDeserializer(options as ClientOptions['options']);
  }

  /** 'connected' | 'reconnecting' | 'disconnected' of the producer connection. */
  override get status(): Observable<RedisStreamsClientStatus> {
    return super.status as Observable<RedisStreamsClientStatus>;
  }

  /** What the Redis server supports, probed on the first connect and after every reconnect; `undefined` before. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.capabilityWatch?.capabilities;
  }

  /** The key of this instance's reply stream. */
  get replyStream(): string {
    return this.replyKey;
  }

  /** Opens the producer connection (idempotent). `emit`/`send` call it for you. */
  connect(): Promise<RedisClient> {
    this.connecting ??= this.open().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    return this.connecting;
  }

  /** Fails pending requests ("Connection closed"), deletes the reply stream, closes both connections. */
  async close(): Promise<void> {
    this.generation++;
    const producer = this.producer;
    const replies = this.replies;
    this.producer = undefined;
    this.xadd = undefined;
    this.connecting = undefined;
    this.replies = undefined;
    this.clock?.stop();
    this.clock = undefined;
    this.capabilityWatch?.stop();
    this.failPending(new Error('Connection closed'));
    if (replies) {
      await replies.listener.stop();
      await closeConnection(replies.connection);
      if (producer && producer.client.status === 'ready') {
        await producer.client.del(this.replyKey).catch(noop);
      }
    }
    await closeConnection(producer);
    this._status$.next('disconnected');
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** Listens to an ioredis event of the producer connection (kept across reconnects and `close()`). */
  override on<K extends keyof RedisStreamsClientEvents>(event: K, callback: RedisStreamsClientEvents[K]): void {
    const given = callback as (...args: unknown[]) => void;
    // ioredis' errors can carry the password (a failed HELLO … AUTH): cleaned before user code sees them.
    const listener = { event, callback: event === 'error' ? (error: unknown) => given(this.redactor.error(error)) : given };
    this.eventListeners.push(listener);
    this.producer?.client.on(event, listener.callback);
  }

  /** The producer's ioredis client (`Redis` or `Cluster`). */
  unwrap<T = RedisClient>(): T {
    if (!this.producer) throw new Error('Not initialized. Please call the "connect" method first.');
    return this.producer.client as T;
  }

  /**
   * Same contract as Nest's `emit` (eager: the XADD goes out even if nobody subscribes; every
   * subscriber gets the entry id), without Nest's per-call connect Observables once connected.
   */
  override emit<TResult = string | null, TInput = unknown>(pattern: unknown, data: TInput): Observable<TResult> {
    if (pattern === null || pattern === undefined || data === null || data === undefined) {
      // Nest's InvalidMessageException text (the class is not exported).
      return throwError(() => new Error('The invalid data or message pattern (undefined/null)'));
    }
    const written = this.xadd
      ? this.dispatchEvent<TResult>(this.packetOf(pattern, data))
      : this.connect().then(() => this.dispatchEvent<TResult>(this.packetOf(pattern, data)));
    // Nobody may subscribe to an emit: its failure must not become an unhandled rejection.
    written.catch(noop);
    // Cheapest Observable over the (already running) XADD: emits are the hot path.
    return new Observable<TResult>((subscriber) => {
      written.then(
        (id) => {
          subscriber.next(id);
          subscriber.complete();
        },
        (error: unknown) => subscriber.error(this.publishError(pattern, error)),
      );
    });
  }

  /** The XADD of an event. Rejections are raw ioredis errors; `emit` wraps them (off the hot path). */
  protected dispatchEvent<T = string | null>(packet: ReadPacket): Promise<T> {
    const telemetry = this.telemetry;
    if (telemetry === undefined) return this.writeEvent<T>(packet, undefined);
    const trace = telemetry.startSend(streamKeyFor(this.normalizePattern(packet.pattern), this.config.streamPrefix));
    const written = this.writeEvent<T>(packet, trace);
    written.then(
      (id) => trace.end({ id: id as string | null }),
      (error: unknown) => trace.end({ error }),
    );
    return written;
  }

  /** `trace`: the producer span whose context goes into the entry's headers. */
  private writeEvent<T>(packet: ReadPacket, trace: ProducerTrace | undefined): Promise<T> {
    try {
      const record = packet.data instanceof RedisStreamsRecord ? (packet.data as RedisStreamsRecord) : undefined;
      const options = record ? record.options : EMPTY_OPTIONS;
      const data = record ? record.data : packet.data;
      const pattern = this.normalizePattern(packet.pattern);
      const trimming = this.trimmingFor(pattern, options);
      const idmp = idmpArgs(this.config.producerId, this.config.idempotence, options.idempotencyKey, this.capabilities);
      const args = this.xaddHead(pattern, trimming, options.noMkStream ?? this.config.noMkStream, idmp);
      if (args === undefined) return this.clockReady().then(() => this.writeEvent<T>(packet, trace));
      if (options.raw) {
        if (options.headers !== undefined) {
          throw new RedisStreamsOptionError('headers', 'a raw record is written as it is and cannot carry headers');
        }
        pushRawFields(args, data);
        return this.sendXAdd(args) as Promise<T>;
      }
      const given = options.headers === undefined ? undefined : validateHeaders(options.headers);
      const headers = trace === undefined ? given : { ...trace.headers, ...given };
      if (this.identitySerializer) {
        pushEntryFields(args, pattern, data, packet.metadata, headers);
        return this.sendXAdd(args) as Promise<T>;
      }
      const outgoing: OutgoingPacket = { pattern, data, metadata: packet.metadata };
      const serialized = this.serializer.serialize(outgoing);
      const write = (value: unknown) => {
        const final = serializedPacket(outgoing, value);
        pushEntryFields(args, final.pattern, final.data, final.metadata, headers);
        return this.sendXAdd(args);
      };
      return (isThenable(serialized) ? serialized.then(write) : write(serialized)) as Promise<T>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  protected publish(partialPacket: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const { data, options } = unwrapRecord(partialPacket.data);
    if (options.raw) {
      throw new RedisStreamsOptionError('raw', 'send() needs pattern, id and replyTo fields: raw records are for emit() only');
    }
    const pattern = this.normalizePattern(partialPacket.pattern);
    const stream = streamKeyFor(pattern, this.config.streamPrefix);
    const timeoutMs = timerMillisOption('timeout', options.timeout, this.config.timeout, 1);
    const given = validateHeaders(options.headers);
    const trimming = this.trimmingFor(pattern, options);
    const packet = this.assignPacketId({ pattern, data, metadata: partialPacket.metadata });
    const id = packet.id;
    // The request's PRODUCER span lasts until the reply (or the failure) arrives.
    const trace = this.telemetry?.startSend(stream, id);
    const headers = trace === undefined ? given : { ...trace.headers, ...given };

    let settled = false;
    const teardown = () => {
      settled = true;
      trace?.end({});
      clearTimeout(timer);
      this.routingMap.delete(id);
    };
    const deliver = (reply: WritePacket) => {
      if (settled) return;
      if (reply.err !== undefined && reply.err !== null) {
        trace?.end({ error: reply.err });
        teardown();
        callback({ err: translateReplyError(reply.err, pattern, stream), isDisposed: true });
        return;
      }
      if (reply.isDisposed) teardown();
      callback(reply);
    };
    const timer = setTimeout(() => deliver({ err: new RedisStreamsTimeoutError(pattern, timeoutMs) }), timeoutMs);
    this.routingMap.set(id, deliver);

    const write = (serialized: unknown, replyTo: string): Promise<string | null> => {
      const args = this.xaddHead(pattern, trimming, true);
      if (args === undefined) return this.clockReady().then(() => write(serialized, replyTo));
      const final = serializedPacket(packet, serialized);
      pushEntryFields(args, final.pattern, final.data, final.metadata, headers, id, replyTo);
      return this.sendXAdd(args);
    };
    let written: Promise<string | null>;
    try {
      const replyTo = this.ensureReplyListener().key;
      const serialized = this.serializer.serialize(packet);
      written = isThenable(serialized) ? serialized.then((value) => write(value, replyTo)) : write(serialized, replyTo);
    } catch (error) {
      // Nothing was sent (a serializer threw, JSON cannot encode the data): nothing may wait for a reply.
      teardown();
      throw error;
    }
    written.then(
      (entryId) => {
        // NOMKSTREAM returned nil: no server ever created this stream's group.
        if (entryId === null) deliver({ err: new RedisStreamsNoHandlerError(pattern, stream) });
      },
      (error: unknown) => deliver({ err: this.publishError(pattern, error) }),
    );
    return teardown;
  }

  private packetOf(pattern: unknown, data: unknown): ReadPacket {
    return createPacket ? createPacket.call(this, pattern, data) : { pattern, data };
  }

  private trimmingFor(pattern: string, options: RedisStreamsRecordOptions): CompiledTrimming {
    if (options.trim !== undefined) return compileTrimming('trim', options.trim);
    return this.config.trimming.get(pattern) ?? this.config.trim;
  }

  /**
   * `[stream, NOMKSTREAM?, MAXLEN|MINID ~ n, '*']`, the start of an XADD; `undefined` while the
   * server clock that `maxAge` trimming needs is not known yet (only before the first TIME reply).
   */
  private xaddHead(pattern: string, trimming: CompiledTrimming, noMkStream: boolean, idmp: readonly string[] = []): Args | undefined {
    const args: Args = [streamKeyFor(pattern, this.config.streamPrefix)];
    if (noMkStream) args.push('NOMKSTREAM');
    if (idmp.length > 0) args.push(...idmp);
    if (trimming.kind === 'maxLen') {
      args.push(trimming.args[0] as string, trimming.args[1] as string, trimming.args[2] as string);
      if (trimming.onlyAcked) {
        const unsupported = trimmingUnsupported(trimming, this.capabilities, 'trim.onlyAcked');
        if (unsupported !== undefined) throw unsupported;
        args.push('ACKED');
      }
    } else if (trimming.kind === 'maxAge') {
      const now = this.clock?.now();
      if (now === undefined) return undefined;
      const unsupported = trimmingUnsupported(trimming, this.capabilities, 'trim.onlyAcked');
      if (unsupported !== undefined) throw unsupported;
      args.push(...minIdArgs(trimming, now));
    }
    args.push('*');
    return args;
  }

  private sendXAdd(args: Args): Promise<string | null> {
    const xadd = this.xadd;
    if (!xadd) return Promise.reject(new Error('Connection closed'));
    // With an idempotency key (IDMP, only sent when the server has it) a retry cannot duplicate the entry.
    const idempotence = this.config.idempotence;
    if (idempotence === undefined || idempotence.retries === 0 || !carriesIdmp(args)) return xadd(args);
    return sendWithRetries(() => (this.xadd ?? xadd)(args), idempotence.retries, idempotence.retryDelayMs);
  }

  /** Failures name the stream; option errors stay as they are. */
  private publishError(pattern: unknown, error: unknown): unknown {
    if (error instanceof RedisStreamsOptionError || error instanceof RedisStreamsPublishError) return this.redactor.error(error);
    const stream = streamKeyFor(this.normalizePattern(pattern as string), this.config.streamPrefix);
    return this.redactor.error(new RedisStreamsPublishError(stream, this.redactor.error(error)));
  }

  private clockReady(): Promise<void> {
    const clock = this.clock;
    if (!clock) return this.connect().then(() => this.clockReady());
    clock.start();
    return clock.ready();
  }

  private async open(): Promise<RedisClient> {
    const generation = ++this.generation;
    const { commandTimeout } = this.config;
    const cluster = isClusterConnectionOption(this.config.connection);
    const opened = openConnection(
      this.config.connection,
      'client',
      // Many emits in flight share socket writes: per tick (batchThisTick) on one connection,
      // through ioredis' auto-pipelining on a Cluster. commandTimeout bounds every XADD.
      { enableAutoPipelining: cluster, commandTimeout, connectTimeout: commandTimeout, lazyConnect: true },
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
      const cause = lastError ?? error;
      throw this.redactor.error(
        new RedisStreamsConnectionError(
          `Cannot connect to Redis at ${describeConnection(this.config.connection)}: ${(cause as Error).message}`,
          { cause },
        ),
      );
    } finally {
      client.off('error', remember);
    }
    // Resolved once per connect: loads @opentelemetry/api if it is installed (an optional peer).
    const telemetry = await Telemetry.load(this.config.telemetry);
    // A server lacking a command we need fails the first connect, naming the command.
    const watch = new CapabilityWatch(client, (capabilities) => this.logger.debug?.(describeCapabilities(capabilities)), (error) =>
      this.logger.debug?.(`capability probe after a reconnect failed: ${(error as Error).message}`),
    );
    try {
      const capabilities = await withTimeout(watch.start(), commandTimeout, 'capability probe');
      requireCommands(capabilities, CLIENT_COMMANDS, 'RedisStreamsClient');
      requireCapabilities(capabilities, clientRequirements(this.config));
    } catch (error) {
      watch.stop();
      client.disconnect();
      throw error;
    }
    if (generation !== this.generation) {
      watch.stop();
      client.disconnect();
      throw new Error('Connection closed');
    }
    this.capabilityWatch = watch;
    // From now on a command sent while the connection is down fails at once instead of
    // waiting in ioredis' offline queue (and being written later, after we reported failure).
    client.options.enableOfflineQueue = false;
    this.producer = opened;
    this.telemetry = telemetry;
    const xadd = client.xadd.bind(client) as unknown as XAdd;
    this.xadd = (args) => {
      batchThisTick(client);
      return xadd(args);
    };
    this.clock = new ServerClock(client, this.config.clockRefreshInterval);
    if (this.usesMaxAge()) this.clock.start();
    this._status$.next('connected');
    return client;
  }

  private watchStatus(client: RedisClient): void {
    let lastError: string | undefined;
    client.on('ready', () => {
      lastError = undefined;
      if (this.producer?.client === client) this._status$.next('connected');
    });
    client.on('reconnecting', () => {
      if (this.producer?.client === client) this._status$.next('reconnecting');
    });
    client.on('end', () => {
      if (this.producer?.client === client) this._status$.next('disconnected');
    });
    client.on('error', (error: Error) => {
      // One line per outage, not one per reconnect attempt.
      if (this.producer?.client !== client || error.message === lastError) return;
      lastError = error.message;
      this.logger.error(`Redis connection error: ${error.message}`);
    });
  }

  private usesMaxAge(): boolean {
    if (this.config.trim.kind === 'maxAge') return true;
    for (const trimming of this.config.trimming.values()) if (trimming.kind === 'maxAge') return true;
    return false;
  }

  private ensureReplyListener(): ReplyListener {
    if (this.replies) return this.replies.listener;
    const producer = this.producer;
    if (!producer) throw new Error('Not initialized. Please call the "connect" method first.');
    // A blocking read holds its socket: it gets a connection of its own, which waits out outages.
    const connection = openConnection(
      this.config.connection,
      'client-replies',
      { lazyConnect: true, maxRetriesPerRequest: null, commandTimeout: undefined, enableAutoPipelining: false },
      true,
    );
    connection.client.on('error', noop);
    const listener = new ReplyListener(
      connection.client,
      producer.client,
      this.replyKey,
      this.config.replyTtl,
      (fields) => this.route(fields),
      this.logger,
    );
    this.replies = { listener, connection };
    listener.start();
    return listener;
  }

  private route(fields: StreamFields): void {
    const { id, packet } = decodeReply(fields);
    const callback = this.routingMap.get(id);
    if (!callback) return; // timed out, unsubscribed, or another client's leftover
    const incoming = this.deserializer.deserialize({ id, ...packet });
    const deliver = (reply: WritePacket) =>
      callback({ err: reply.err, response: reply.response, isDisposed: reply.isDisposed !== false });
    if (isThenable(incoming)) incoming.then(deliver, (error: unknown) => callback({ err: error, isDisposed: true }));
    else deliver(incoming);
  }

  private failPending(error: Error): void {
    const callbacks = [...this.routingMap.values()];
    this.routingMap.clear();
    for (const callback of callbacks) {
      try {
        callback({ err: error, isDisposed: true });
      } catch (callbackError) {
        this.logger.error(callbackError);
      }
    }
  }
}

function unwrapRecord(value: unknown): { data: unknown; options: RedisStreamsRecordOptions } {
  return value instanceof RedisStreamsRecord ? { data: value.data, options: value.options } : { data: value, options: EMPTY_OPTIONS };
}

/** Identity serializers hand the packet back; other serializers return a new packet (or just its data). */
function serializedPacket(packet: OutgoingPacket, serialized: unknown): OutgoingPacket {
  if (serialized === packet) return packet;
  if (serialized !== null && typeof serialized === 'object' && 'data' in serialized) {
    return { ...packet, ...(serialized as Partial<OutgoingPacket>) };
  }
  return { ...packet, data: serialized };
}

/** Nest's "no handler" reply (a string, or an object carrying it) becomes one error type. */
function translateReplyError(err: unknown, pattern: string, stream: string): unknown {
  const message = typeof err === 'string' ? err : (err as { message?: unknown } | null)?.message;
  return message === NO_MESSAGE_HANDLER && !(err instanceof RedisStreamsNoHandlerError)
    ? new RedisStreamsNoHandlerError(pattern, stream)
    : err;
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
