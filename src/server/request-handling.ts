import { isObservable } from 'rxjs';
import { NO_MESSAGE_HANDLER, type ReplyPacket } from '../codec/reply.js';
import type { RedisStreamsContext } from './context.js';
import type { InFlightEntry } from './in-flight.js';
import { requestFailed, settleAnswered, writeReply, type DecodedRequest, type RequestHost } from './request-replies.js';
import { streamReplies } from './streamed-reply.js';

/**
 * Runs a request's message handler and writes its reply (`{ response }` or `{ err }`) to the
 * requester's reply stream, then settles the entry: auto mode acks a request answered (with its
 * error too); manual mode leaves a failed one pending, released, as a failed event. A promise or a
 * plain value is one reply entry; an Observable sends each of its values (streamed-reply.ts).
 */
export async function handleRequest(host: RequestHost, entry: InFlightEntry, decoded: DecodedRequest, pattern: string, context: RedisStreamsContext): Promise<void> {
  const { binding } = entry;
  const handler = pattern === binding.pattern ? binding.handler : host.handlerFor(pattern);
  if (handler === null || handler.isEventHandler) {
    if (!(await writeReply(host, entry, decoded, { err: NO_MESSAGE_HANDLER, isDisposed: true }, false, undefined))) return;
    if (entry.settled) host.finish(entry, true);
    else host.ackUnanswerable(entry);
    return;
  }
  let packet: ReplyPacket;
  let failed = false;
  let ownError: unknown;
  try {
    // Nest's RPC proxy (guards, interceptors, pipes, filters) is inside `handler`; a promise or
    // a plain value needs no Observable around it.
    let response: unknown = handler(decoded.data, context);
    if (response instanceof Promise) response = await response;
    if (isObservable(response)) {
      streamReplies(host, entry, decoded, response);
      return;
    }
    packet = { response, isDisposed: true };
  } catch (error) {
    failed = true;
    ownError = requestFailed(host, entry, error);
    packet = { err: error, isDisposed: true };
  }
  if (await writeReply(host, entry, decoded, packet, failed, ownError)) settleAnswered(host, entry, failed);
}
