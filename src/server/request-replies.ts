import type { MessageHandler, OutgoingResponse } from '@nestjs/microservices';
import type { ReplyPacket } from '../codec/reply.js';
import type { DecodedEntry } from '../codec/stream-deserializer.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { errorMessage } from '../error-message.js';
import type { InFlightEntry } from './in-flight.js';
import type { ReplyWriter } from './reply-writer.js';
import type { RunningStreams } from './running-streams.js';

/** A request entry: decoded, with the correlation id and the reply stream. */
export type DecodedRequest = DecodedEntry & { id: string; replyTo: string };

/** What answering a request needs from the server. */
export interface RequestHost {
  readonly replies: ReplyWriter;
  readonly telemetry: Telemetry | undefined;
  /** The streamed replies running (close() abandons those left after shutdownTimeout). */
  readonly streams: RunningStreams;
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
 * Bookkeeping of a failed handler; returns its own error. The requester gets what Nest's filters
 * made of the error; a dead letter (manual mode, or a reply that could not be written) records the
 * handler's own. Recorded only where the entry stays pending: an answered request in auto mode is
 * acked, its record would only linger.
 */
export function requestFailed(host: RequestHost, entry: InFlightEntry, error: unknown): unknown {
  const ownError = entry.handlerError ?? error;
  host.telemetry?.failed(entry, ownError);
  if (entry.binding.ackMode === 'manual') host.recordHandlerError(entry, ownError);
  return ownError;
}

/** Serializes and writes one reply (one reply span). False when it failed: see `replyFailed`. */
export async function writeReply(host: RequestHost, entry: InFlightEntry, decoded: DecodedRequest, packet: ReplyPacket, failed: boolean, ownError: unknown): Promise<boolean> {
  const trace = host.telemetry?.startReply(entry, decoded.replyTo, decoded.id);
  try {
    let outgoing = host.serialize(packet);
    if (outgoing instanceof Promise) outgoing = await outgoing;
    // The correlation id travels in the reply's own `id` field, not inside the packet.
    await host.replies.write(decoded.replyTo, decoded.id, outgoing);
    trace?.end({});
    return true;
  } catch (error) {
    trace?.end({ error });
    replyFailed(host, entry, decoded, error, failed, ownError);
    return false;
  }
}

/** Several replies of one request, in order, in one write (one reply span each). False when it failed. */
export async function writeReplies(
  host: RequestHost,
  entry: InFlightEntry,
  decoded: DecodedRequest,
  packets: readonly ReplyPacket[],
  failed: boolean,
  ownError: unknown,
): Promise<boolean> {
  const { telemetry } = host;
  const traces = telemetry === undefined ? undefined : packets.map(() => telemetry.startReply(entry, decoded.replyTo, decoded.id));
  try {
    const outgoing: ReplyPacket[] = [];
    for (const packet of packets) {
      let serialized = host.serialize(packet);
      if (serialized instanceof Promise) serialized = await serialized;
      outgoing.push(serialized);
    }
    await host.replies.writeAll(decoded.replyTo, decoded.id, outgoing);
    if (traces !== undefined) for (const trace of traces) trace.end({});
    return true;
  } catch (error) {
    if (traces !== undefined) for (const trace of traces) trace.end({ error });
    replyFailed(host, entry, decoded, error, failed, ownError);
    return false;
  }
}

/** A reply could not be written: reported, and the entry finished as failed (it stays pending). */
function replyFailed(host: RequestHost, entry: InFlightEntry, decoded: DecodedRequest, error: unknown, failed: boolean, ownError: unknown): void {
  if (failed && entry.binding.ackMode !== 'manual') host.recordHandlerError(entry, ownError);
  host.emitError(
    new Error(`reply to "${decoded.replyTo}" for entry ${entry.id} of "${entry.binding.stream}" failed; the request stays pending: ${errorMessage(error)}`),
  );
  host.finish(entry, false);
}

/**
 * The final reply is written. Auto mode acks a request answered with its error; manual mode never
 * acks by itself, so a failed request is released and stays pending, as a failed event (else it
 * holds its slot forever).
 */
export function settleAnswered(host: RequestHost, entry: InFlightEntry, failed: boolean): void {
  host.finish(entry, !(failed && entry.binding.ackMode === 'manual'));
}

/** The serializer call typed for reply packets. */
export function serializeWith(serializer: { serialize(value: OutgoingResponse): unknown }): (packet: ReplyPacket) => ReplyPacket | Promise<ReplyPacket> {
  return (packet) => serializer.serialize(packet as OutgoingResponse) as ReplyPacket | Promise<ReplyPacket>;
}
