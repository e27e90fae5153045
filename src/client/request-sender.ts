import type { Logger } from '@nestjs/common';
import type { PacketId, ReadPacket, WritePacket } from '@nestjs/microservices';
import { decodeReplyPacket } from '../codec/reply.js';
import { WireField } from '../codec/wire-format.js';
import { RedisStreamsOptionError } from '../errors.js';
import { closeConnection, openConnection, type OpenedConnection } from '../redis/connection.js';
import { startTimeoutVerdict } from '../timeout.js';
import { describe, integerOption, timerMillisOption } from '../validation.js';
import { pushEntryFields, validateHeaders } from './entry-fields.js';
import { NO_MESSAGE_HANDLER, RedisStreamsNoHandlerError, RedisStreamsReplyDecodeError, RedisStreamsTimeoutError } from './errors.js';
import { isThenable, serializedPacket, unwrapRecord } from './outgoing-packet.js';
import { checkPattern } from './pattern-check.js';
import type { PartitionRouter } from './partition-router.js';
import type { ProducerConnection } from './producer-connection.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import { ConnectionClosedError } from './connection-closed.js';
import { rawReplyOf } from './raw-reply.js';
import { ReplyListener, type ReplyEntry } from './reply-listener.js';
import type { XAddWriter } from './xadd-writer.js';

const noop = (): void => undefined;

/** The reply side of a client: its blocking reader and the connection it holds. */
export interface ReplySide {
  readonly listener: ReplyListener;
  readonly connection: OpenedConnection;
}

/** What sending requests takes from the client (Nest's routing map, packet ids and (de)serializers among them). */
export interface RequestSenderHost {
  readonly config: ResolvedClientOptions;
  readonly logger: Logger;
  /** This instance's reply stream. */
  readonly replyKey: string;
  readonly producer: ProducerConnection;
  readonly xadds: XAddWriter;
  /** Picks the stream (or partition) of each request. */
  readonly router: PartitionRouter;
  /** Nest's callbacks of the requests awaiting their reply, by correlation id. */
  readonly routingMap: Map<string, (packet: WritePacket) => void>;
  normalize(pattern: unknown): string;
  assignPacketId(packet: ReadPacket): ReadPacket & PacketId;
  serialize(packet: ReadPacket & PacketId): unknown;
  deserialize(packet: unknown): WritePacket | Promise<WritePacket>;
}

/**
 * The send path: a request entry (`XADD … NOMKSTREAM` with `id` and `replyTo`) whose replies come
 * back on the instance's reply stream, matched by correlation id, bounded by `timeout`. Non-final
 * replies (a streamed answer) pass through; the call ends at its record's `replies`-th final reply
 * (default 1: every group with a message handler answers, so a broadcast collects several), or
 * at the first error.
 */
export class RequestSender {
  private replies: ReplySide | undefined;

  constructor(private readonly host: RequestSenderHost) {}

  /** Nest's `publish`: writes the request; returns the teardown Nest calls on unsubscribe. */
  publish(partialPacket: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    const { host } = this;
    const { data, options } = unwrapRecord(partialPacket.data);
    if (options.raw) {
      throw new RedisStreamsOptionError('raw', 'send() needs pattern, id and replyTo fields: raw records are for emit() only');
    }
    if (options.delay !== undefined || options.deliverAt !== undefined || options.repeat !== undefined) {
      throw new RedisStreamsOptionError(
        options.repeat !== undefined ? 'repeat' : options.delay === undefined ? 'deliverAt' : 'delay',
        'is for emit() only: a request waits for its reply within its timeout; emit a delayed event instead, or send() when it is due',
      );
    }
    const pattern = checkPattern(host.normalize(partialPacket.pattern));
    // The first request of a partitioned pattern waits for the check of its partition count.
    const { stream, ready } = host.router.route(pattern, options);
    const timeoutMs = timerMillisOption('timeout', options.timeout, host.config.timeout, 1);
    const expected = integerOption('replies', options.replies, 1, 1);
    const given = validateHeaders(options.headers);
    const trimming = host.xadds.trimmingFor(pattern, options);
    const packet = host.assignPacketId({ pattern, data, metadata: partialPacket.metadata });
    const id = packet.id;
    // The request's PRODUCER span lasts until the reply (or the failure) arrives.
    const trace = host.producer.telemetry?.startSend(stream, id);
    const headers = trace === undefined ? given : { ...trace.headers, ...given };

    let settled = false;
    let finals = 0;
    const teardown = () => {
      settled = true;
      trace?.end({});
      cancelTimeout();
      host.routingMap.delete(id);
    };
    const deliver = (reply: WritePacket) => {
      if (settled) return;
      if (reply.err !== undefined && reply.err !== null) {
        trace?.end({ error: reply.err });
        teardown();
        callback({ err: translateReplyError(reply.err, pattern, stream, id, host.replyKey), isDisposed: true });
        return;
      }
      if (reply.isDisposed && ++finals < expected) {
        // A final reply of one responder while others are awaited: its value goes on, the call stays open.
        if (reply.response !== undefined) callback({ response: reply.response, isDisposed: false });
        return;
      }
      if (reply.isDisposed) teardown();
      callback(reply);
    };
    // Judged after replies already in the socket were read: a stalled event loop is not a late reply.
    const cancelTimeout = startTimeoutVerdict(
      () => deliver({ err: new RedisStreamsTimeoutError(pattern, timeoutMs, expected, finals) }),
      timeoutMs,
    );
    host.routingMap.set(id, deliver);

    const write = (serialized: unknown, replyTo: string): Promise<string | null> => {
      const args = host.xadds.head(stream, trimming, true);
      if (args === undefined) return host.producer.clockReady().then(() => write(serialized, replyTo));
      const final = serializedPacket(packet, serialized);
      pushEntryFields(args, final.pattern, final.data, final.metadata, headers, id, replyTo);
      return host.xadds.send(args, trimming);
    };
    let written: Promise<string | null>;
    try {
      const replyTo = this.ensureReplyListener().key;
      const serialized = host.serialize(packet);
      written =
        ready === undefined && !isThenable(serialized)
          ? write(serialized, replyTo)
          : Promise.all([ready, serialized]).then(([, value]) => write(value, replyTo));
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
      (error: unknown) => deliver({ err: host.xadds.publishError(pattern, error) }),
    );
    return teardown;
  }

  /** Fails every request awaiting its reply (`close()`: "Connection closed"). */
  failPending(error: Error): void {
    const { routingMap } = this.host;
    const callbacks = [...routingMap.values()];
    routingMap.clear();
    for (const callback of callbacks) {
      try {
        callback({ err: error, isDisposed: true });
      } catch (callbackError) {
        this.host.logger.error(callbackError);
      }
    }
  }

  /** Forgets the reply side (a later send opens a new one); returns it for `closeReplies`. */
  detachReplies(): ReplySide | undefined {
    const replies = this.replies;
    this.replies = undefined;
    return replies;
  }

  /** Stops the reply reader and closes its connection. */
  async closeReplies(replies: ReplySide): Promise<void> {
    await replies.listener.stop();
    await closeConnection(replies.connection);
  }

  private ensureReplyListener(): ReplyListener {
    if (this.replies) return this.replies.listener;
    const { host } = this;
    const producer = host.producer.client;
    // publish() runs once connect() resolved: no producer now means close() detached it since.
    if (!producer) throw new ConnectionClosedError();
    // A blocking read holds its socket: it gets a connection of its own, which waits out outages.
    const connection = openConnection(
      host.config.connection,
      'client-replies',
      { lazyConnect: true, maxRetriesPerRequest: null, commandTimeout: undefined, enableAutoPipelining: false },
      true,
    );
    connection.client.on('error', noop);
    const { replyTtl, rawReplies } = host.config;
    const route = (entry: ReplyEntry, entryId: string) => this.route(entry, entryId);
    const listener = new ReplyListener(connection.client, producer, host.replyKey, replyTtl, rawReplies, route, host.logger);
    this.replies = { listener, connection };
    listener.start();
    return listener;
  }

  /**
   * Routes a reply entry by its `id` field before decoding it, so a reply that cannot be decoded
   * (not JSON, a deserializer that throws) fails its request at once instead of leaving it to time out.
   */
  private route(entry: ReplyEntry, entryId: string): void {
    const id = fieldOf(entry, WireField.id);
    if (id === undefined) throw new Error(`reply entry has no "${WireField.id}" field`);
    const callback = this.host.routingMap.get(id);
    if (!callback) return; // timed out, unsubscribed, or another client's leftover
    let reply: unknown;
    if (this.host.config.rawReplies) reply = rawReplyOf(id, entryId, entry);
    else {
      try {
        reply = { id, ...decodeReplyPacket(fieldOf(entry, WireField.packet)) };
      } catch (error) {
        failDecoding(callback, entryId, new Error(`${(error as Error).message} (a responder that answers with bytes needs the client option rawReplies)`));
        return;
      }
    }
    let incoming: WritePacket | Promise<WritePacket>;
    try {
      incoming = this.host.deserialize(reply);
    } catch (error) {
      failDecoding(callback, entryId, error);
      return;
    }
    if (isThenable(incoming)) {
      incoming.then(
        (decoded) => deliverDecoded(callback, entryId, decoded),
        (error: unknown) => failDecoding(callback, entryId, error),
      );
    } else deliverDecoded(callback, entryId, incoming);
  }
}

type ReplyCallback = (packet: WritePacket) => void;

/** What the deserializer made of a reply, to its request (a missing `isDisposed` is a final reply). */
function deliverDecoded(callback: ReplyCallback, entryId: string, decoded: WritePacket): void {
  if (decoded === null || typeof decoded !== 'object') {
    failDecoding(callback, entryId, new Error(`the deserializer returned ${describe(decoded)}, not { response?, err?, isDisposed? }`));
    return;
  }
  callback({ err: decoded.err, response: decoded.response, isDisposed: decoded.isDisposed !== false });
}

function failDecoding(callback: ReplyCallback, entryId: string, error: unknown): void {
  callback({ err: new UndecodableReply(entryId, error), isDisposed: true });
}

/** A field of a reply entry as text (the last one when repeated, as in a field map). */
function fieldOf(entry: ReplyEntry, field: string): string | undefined {
  let value: string | Buffer | undefined;
  for (let i = 0; i + 1 < entry.length; i += 2) {
    const name = entry[i] as string | Buffer;
    if (typeof name === 'string' ? name === field : name.length === field.length && name.toString() === field) value = entry[i + 1];
  }
  return value === undefined ? undefined : String(value);
}

/** A reply the routing could not decode; the request's callback names it (pattern, ids). */
class UndecodableReply {
  constructor(
    readonly entryId: string,
    readonly cause: unknown,
  ) {}
}

/**
 * Nest's "no handler" reply (a string, or an object carrying it) becomes one error type; a reply
 * that could not be decoded becomes a `RedisStreamsReplyDecodeError` naming the request.
 */
function translateReplyError(err: unknown, pattern: string, stream: string, correlationId: string, replyStream: string): unknown {
  if (err instanceof UndecodableReply) {
    const reason = err.cause instanceof Error ? err.cause.message : String(err.cause);
    return new RedisStreamsReplyDecodeError(pattern, correlationId, replyStream, err.entryId, reason, { cause: err.cause });
  }
  const message = typeof err === 'string' ? err : (err as { message?: unknown } | null)?.message;
  return message === NO_MESSAGE_HANDLER && !(err instanceof RedisStreamsNoHandlerError)
    ? new RedisStreamsNoHandlerError(pattern, stream)
    : err;
}
