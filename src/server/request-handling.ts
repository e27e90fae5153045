import type { MessageHandler, OutgoingResponse } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import { NO_MESSAGE_HANDLER, type ReplyPacket } from '../codec/reply.js';
import type { DecodedEntry } from '../codec/stream-deserializer.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { RedisStreamsContext } from './context.js';
import { errorMessage } from './groups.js';
import type { InFlightEntry } from './in-flight.js';
import type { ReplyWriter } from './reply-writer.js';

/** A request entry: decoded, with the correlation id and the reply stream. */
export type DecodedRequest = DecodedEntry & { id: string; replyTo: string };

/** What answering a request needs from the server. */
export interface RequestHost {
  readonly replies: ReplyWriter;
  readonly telemetry: Telemetry | undefined;
  /** The message handler of `pattern` (Nest's lookup), or null. */
  handlerFor(pattern: string): MessageHandler | null;
  /** Nest's serializer of the reply packet. */
  serialize(packet: ReplyPacket): ReplyPacket | Promise<ReplyPacket>;
  /** Remembers the handler's own error for a later dead letter. */
  recordHandlerError(entry: InFlightEntry, error: unknown): void;
  emitError(error: Error): void;
  /** Handler slot back, then ack / release as the entry's outcome says. */
  finish(entry: InFlightEntry, succeeded: boolean): void;
  /** An entry nothing here can answer: acked in any ack mode. */
  ackUnanswerable(entry: InFlightEntry): void;
}

/**
 * Runs a request's message handler and writes its reply (`{ response }` or `{ err }`) to the
 * requester's reply stream, then settles the entry: auto mode acks a request answered (with its
 * error too); manual mode leaves a failed one pending, released, as a failed event.
 */
export async function handleRequest(host: RequestHost, entry: InFlightEntry, decoded: DecodedRequest, pattern: string, context: RedisStreamsContext): Promise<void> {
  const { binding } = entry;
  const handler = pattern === binding.pattern ? binding.handler : host.handlerFor(pattern);
  let packet: ReplyPacket;
  let handled = false;
  let failed = false;
  let ownError: unknown;
  if (handler === null || handler.isEventHandler) {
    packet = { err: NO_MESSAGE_HANDLER, isDisposed: true };
  } else {
    handled = true;
    try {
      // Nest's RPC proxy (guards, interceptors, pipes, filters) is inside `handler`; a promise or
      // a plain value needs no Observable around it.
      let response: unknown = handler(decoded.data, context);
      if (response instanceof Promise) response = await response;
      if (isObservable(response)) response = await lastValueFrom(response, { defaultValue: undefined });
      packet = { response, isDisposed: true };
    } catch (error) {
      failed = true;
      // The requester gets what Nest's filters made of the error; a dead letter (manual mode, or a
      // reply that could not be written) records the handler's own. Recorded only where the entry
      // stays pending: an answered request in auto mode is acked, its record would only linger.
      ownError = entry.handlerError ?? error;
      host.telemetry?.failed(entry, ownError);
      if (entry.binding.ackMode === 'manual') host.recordHandlerError(entry, ownError);
      packet = { err: error, isDisposed: true };
    }
  }
  const replyTrace = host.telemetry?.startReply(entry, decoded.replyTo, decoded.id);
  try {
    // The correlation id travels in the reply's own `id` field, not inside the packet.
    let outgoing = host.serialize(packet);
    if (outgoing instanceof Promise) outgoing = await outgoing;
    await host.replies.write(decoded.replyTo, decoded.id, outgoing);
    replyTrace?.end({});
  } catch (error) {
    replyTrace?.end({ error });
    if (failed && entry.binding.ackMode !== 'manual') host.recordHandlerError(entry, ownError);
    host.emitError(
      new Error(`reply to "${decoded.replyTo}" for entry ${entry.id} of "${binding.stream}" failed; the request stays pending: ${errorMessage(error)}`),
    );
    host.finish(entry, false);
    return;
  }
  if (!handled && !entry.settled) {
    host.ackUnanswerable(entry);
    return;
  }
  // Auto mode acks a request answered with its error; manual mode never acks by itself, so a
  // failed request is released and stays pending, as a failed event (else it holds its slot forever).
  host.finish(entry, !(failed && entry.binding.ackMode === 'manual'));
}

/** The serializer call typed for reply packets. */
export function serializeWith(serializer: { serialize(value: OutgoingResponse): unknown }): (packet: ReplyPacket) => ReplyPacket | Promise<ReplyPacket> {
  return (packet) => serializer.serialize(packet as OutgoingResponse) as ReplyPacket | Promise<ReplyPacket>;
}
