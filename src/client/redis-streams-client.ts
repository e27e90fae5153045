import { randomUUID } from 'node:crypto';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ClientProxy, type ClientOptions, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { Observable, throwError } from 'rxjs';
import { cancelEntry, type CancelOptions, type CancelOutcome } from '../lifecycle/cancel.js';
import { entryStatus, type EntryStatus, type EntryStatusOptions } from '../lifecycle/entry-status.js';
import { partitionStreamKeys } from '../partitions/partition-keys.js';
import { priorityStreamKeys } from '../priorities/priority-lanes.js';
import type { RedisStreamsCapabilities } from '../redis/capabilities.js';
import { CloseBudget } from '../redis/close-budget.js';
import { closeConnections, openConnection, type RedisClient } from '../redis/connection.js';
import type { EntryProgressRecord, EntryResultRecord } from '../lifecycle/lifecycle-records.js';
import { NoticeListeners } from '../lifecycle/notice-listeners.js';
import { readProgress, readResult, watchProgress, type ResultOptions } from '../lifecycle/record-reader.js';
import { streamKeyFor } from '../redis/keys.js';
import { RedactingLogger } from '../redacting-logger.js';
import { Redactor } from '../redaction.js';
import { ConnectionClosedError } from './connection-closed.js';
import { EventWriter } from './event-writer.js';
import { PartitionRouter } from './partition-router.js';
import type { RedisStreamsClientEvents, RedisStreamsClientStatus } from './client-events.js';
import { ProducerConnection } from './producer-connection.js';
import { resolveClientOptions, type RedisStreamsClientOptions, type ResolvedClientOptions } from './redis-streams-client.options.js';
import { RequestSender } from './request-sender.js';
import { XAddWriter } from './xadd-writer.js';

export type { RedisStreamsClientEvents, RedisStreamsClientStatus } from './client-events.js';

/** `createPacket` (and the dispatch hook that sets `metadata`) exists from Nest 12 on. */
const createPacket = (ClientProxy.prototype as unknown as { createPacket?: (p: unknown, d: unknown) => ReadPacket })
  .createPacket;
const noop = (): void => undefined;

/**
 * Nest `ClientProxy` for Redis Streams.
 * - `emit(pattern, data)`: one XADD to the pattern's stream (trimmed with `MAXLEN ~` by default);
 *   the Observable yields the new entry id. The XADDs of one tick share one socket write.
 * - `send(pattern, data)`: a request entry (`XADD … NOMKSTREAM`) whose reply comes back on this
 *   instance's private reply stream, matched by correlation id.
 *
 * The class Nest sees; the work is done by producer-connection.ts (connect, status, capabilities),
 * event-writer.ts (emit), request-sender.ts (send, replies) and xadd-writer.ts (the XADDs of both).
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
  private readonly producer: ProducerConnection;
  private readonly xadds: XAddWriter;
  private readonly events: EventWriter;
  private readonly requests: RequestSender;
  private closing: Promise<void> | undefined;
  /** The shared waits of `result({ wait })` and `watch` (made on the first), closed by `close()`. */
  private noticeListeners: NoticeListeners | undefined;

  constructor(options: RedisStreamsClientOptions = {}) {
    super();
    this.config = resolveClientOptions(options);
    this.redactor = Redactor.for(this.config.connection);
    this.logger = new RedactingLogger(RedisStreamsClient.name, this.redactor);
    this.replyKey = `${this.config.replyPrefix}{${randomUUID()}}:replies`;
    this.initializeSerializer(options as ClientOptions['options']);
    this.initializeDeserializer(options as ClientOptions['options']);
    const { config, logger, redactor, replyKey } = this;
    const normalize = (pattern: unknown): string => this.normalizePattern(pattern as string);
    const producer = new ProducerConnection({ config, logger, redactor, reportStatus: (status) => this._status$.next(status) });
    const xadds = new XAddWriter(config, producer, redactor, normalize);
    const router = new PartitionRouter(config, producer, logger);
    this.producer = producer;
    this.xadds = xadds;
    this.events = new EventWriter({
      config,
      producer,
      xadds,
      router,
      identitySerializer: options.serializer === undefined,
      serialize: (packet) => this.serializer.serialize(packet),
      normalize,
    });
    this.requests = new RequestSender({
      config,
      logger,
      replyKey,
      producer,
      xadds,
      router,
      routingMap: this.routingMap as Map<string, (packet: WritePacket) => void>,
      normalize,
      assignPacketId: (packet) => this.assignPacketId(packet),
      serialize: (packet) => this.serializer.serialize(packet),
      deserialize: (packet) => this.deserializer.deserialize(packet) as WritePacket | Promise<WritePacket>,
    });
  }

  /** 'connected' | 'reconnecting' | 'disconnected' of the producer connection. */
  override get status(): Observable<RedisStreamsClientStatus> {
    return super.status as Observable<RedisStreamsClientStatus>;
  }

  /** What the Redis server supports, probed on the first connect and after every reconnect; `undefined` before. */
  get capabilities(): RedisStreamsCapabilities | undefined {
    return this.producer.capabilities;
  }

  /**
   * The stream keys the entries of `pattern` go to: its stream, with `partitions` its partitions'
   * streams in partition order, with `priorities` its lanes' streams highest first (what a
   * scheduler or an inspection reads).
   */
  streamKeysOf(pattern: string): string[] {
    const normalized = this.normalizePattern(pattern);
    const stream = streamKeyFor(normalized, this.config.streamPrefix);
    const lanes = this.config.priorities.get(normalized);
    return lanes !== undefined ? priorityStreamKeys(stream, lanes) : partitionStreamKeys(stream, this.config.partitions.get(normalized) ?? 1);
  }

  /**
   * What became of entry `entryId` of `pattern` (a stream id, or the hold id of a delayed emit):
   * held, waiting, pending, running, done, dead-lettered or gone, per consumer group, looked up in
   * the pattern's partitions or priority lanes as this client routes them (docs/lifecycle.md).
   * Named apart from `status`, which is the connection's status (Nest's `ClientProxy`).
   */
  async entryStatus(pattern: string, entryId: string, options?: EntryStatusOptions): Promise<EntryStatus> {
    const client = await this.connect();
    return entryStatus(client, this.entryStreamsOf(pattern), entryId, options);
  }

  /**
   * The latest `ctx.progress()` value of entry `entryId` of `pattern` (`{ value, delivery, at }`),
   * `null` when none is kept (docs/lifecycle.md).
   */
  async progress(pattern: string, entryId: string): Promise<EntryProgressRecord | null> {
    const client = await this.connect();
    return readProgress(client, this.entryStreamsOf(pattern), entryId);
  }

  /**
   * The kept result of entry `entryId` of `pattern` (handlers with `keepResults`): `{ state: 'done',
   * value }` or `{ state: 'failed', error }`, `null` when none is kept. `wait`: wait that long for it
   * (a blocking read, no polling, on one connection per stream shared by all of this client's
   * waits); `consume`: delete it as it is read, so
   * exactly one caller gets it (docs/lifecycle.md).
   */
  async result(pattern: string, entryId: string, options: ResultOptions = {}): Promise<EntryResultRecord | null> {
    const client = await this.connect();
    return readResult(client, this.entryStreamsOf(pattern), entryId, options, this.noticeListenersOf(client));
  }

  /** Progress updates of entry `entryId` of `pattern` as they are written (the kept one first), completing when its delivery settles (docs/lifecycle.md). */
  watch(pattern: string, entryId: string): Observable<EntryProgressRecord> {
    return new Observable<EntryProgressRecord>((subscriber) => {
      let inner: { unsubscribe(): void } | undefined;
      let closed = false;
      this.connect().then(
        (client) => {
          if (!closed) inner = watchProgress(client, this.entryStreamsOf(pattern), entryId, this.noticeListenersOf(client)).subscribe(subscriber);
        },
        (error: unknown) => subscriber.error(error),
      );
      return () => {
        closed = true;
        inner?.unsubscribe();
      };
    });
  }

  /**
   * Cancels entry `entryId` of `pattern` (a stream id, or a delayed emit's hold id), never losing
   * it: it is dead-lettered with reason `cancelled` and `reason` as its error, and taken out of
   * where it would start (its hold, the stream, every group's pending list). A worker running it
   * learns at its next lease renewal: its `ctx.signal` aborts with reason `cancelled`. An entry
   * already done or gone is left alone (`cancelled: false`). See docs/lifecycle.md.
   */
  async cancel(pattern: string, entryId: string, reason?: string, options?: CancelOptions): Promise<CancelOutcome> {
    const client = await this.connect();
    return cancelEntry(client, this.entryStreamsOf(pattern), entryId, reason, options);
  }

  private entryStreamsOf(pattern: string): { stream: string; keys: string[] } {
    return { stream: streamKeyFor(this.normalizePattern(pattern), this.config.streamPrefix), keys: this.streamKeysOf(pattern) };
  }

  /**
   * The listeners of the lifecycle notices that `result({ wait })` and `watch` share: one blocking
   * connection per stream waited on (a wait must not hold up the producer's commands), not one per wait.
   */
  private noticeListenersOf(client: RedisClient): NoticeListeners {
    this.noticeListeners ??= new NoticeListeners(client, () => {
      const opened = openConnection(this.config.connection, 'client-wait', {}, true);
      // Its failures reach the waiting read (it reads again); reported once more here, they would only be noise.
      opened.client.on('error', noop);
      // Nothing to hand over on a connection blocked in XREAD: closed at once, not after a QUIT waits out the block.
      return { client: opened.client, close: async () => opened.client.disconnect(false) };
    });
    return this.noticeListeners;
  }

  /** The key of this instance's reply stream. */
  get replyStream(): string {
    return this.replyKey;
  }

  /** Opens the producer connection (idempotent). `emit`/`send` call it for you. */
  connect(): Promise<RedisClient> {
    return this.producer.connect();
  }

  /**
   * Fails pending requests ("Connection closed"), deletes the reply stream, closes both
   * connections. Emits and sends made meanwhile fail with "Connection closed"; once it resolved,
   * the next call connects again.
   */
  close(): Promise<void> {
    this.closing ??= this.closeAll().finally(() => {
      this.closing = undefined;
      this.producer.closed();
    });
    return this.closing;
  }

  /**
   * The reply stream's DEL is sent, not waited for: the QUIT after it on the same connection waits
   * for both (CloseBudget's one wait), after the queued XADDs. With Redis not answering the
   * connection is dropped once that wait is spent (the stream expires after `replyTtl` in any case).
   * A DEL waited for on its own would spend the wait meant for the QUIT behind emits already sent.
   */
  private async closeAll(): Promise<void> {
    const listeners = this.noticeListeners;
    this.noticeListeners = undefined;
    await listeners?.close();
    const producer = this.producer.detach();
    const replies = this.requests.detachReplies();
    this.requests.failPending(new ConnectionClosedError());
    if (replies) {
      await this.requests.closeReplies(replies);
      if (producer && producer.client.status === 'ready') producer.client.del(this.replyKey).catch(noop);
    }
    await closeConnections([producer], new CloseBudget());
    this._status$.next('disconnected');
  }

  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** Listens to an ioredis event of the producer connection (kept across reconnects and `close()`). */
  override on<K extends keyof RedisStreamsClientEvents>(event: K, callback: RedisStreamsClientEvents[K]): void {
    const given = callback as (...args: unknown[]) => void;
    // ioredis' errors can carry the password (a failed HELLO … AUTH): cleaned before user code sees them.
    this.producer.addListener(event, event === 'error' ? (error: unknown) => given(this.redactor.error(error)) : given);
  }

  /** The producer's ioredis client (`Redis` or `Cluster`). */
  unwrap<T = RedisClient>(): T {
    const client = this.producer.client;
    if (!client) throw new Error('Not initialized. Please call the "connect" method first.');
    return client as T;
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
    const written = this.producer.xadd
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
        (error: unknown) => subscriber.error(this.xadds.publishError(pattern, error)),
      );
    });
  }

  /** The XADD of an event. Rejections are raw ioredis errors; `emit` wraps them (off the hot path). */
  protected dispatchEvent<T = string | null>(packet: ReadPacket): Promise<T> {
    return this.events.dispatch<T>(packet);
  }

  protected publish(partialPacket: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    return this.requests.publish(partialPacket, callback);
  }

  private packetOf(pattern: unknown, data: unknown): ReadPacket {
    return createPacket ? createPacket.call(this, pattern, data) : { pattern, data };
  }
}
