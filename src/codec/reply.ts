import { WireField, type StreamFields } from './wire-format.js';

/**
 * A reply as Nest's `WritePacket`: `response` on success, `err` on failure, `isDisposed: true`
 * because a Redis Streams reply is always the last (and only) packet of its request.
 */
export interface ReplyPacket {
  response?: unknown;
  err?: unknown;
  isDisposed?: boolean;
}

export interface DecodedReply {
  /** The correlation id of the request this reply answers. */
  readonly id: string;
  readonly packet: ReplyPacket;
}

/** Reply fields as written to the reply stream: `id <correlationId> packet <JSON>`. */
export function encodeReply(correlationId: string, packet: ReplyPacket): StreamFields {
  const fields = Object.create(null) as StreamFields;
  fields[WireField.id] = correlationId;
  fields[WireField.packet] = stringifyPacket(packet);
  return fields;
}

/**
 * The flat `[field, value, ...]` XADD argument list of a reply. A packet that is bytes (a server
 * serializer that returns a Buffer) is written as they are, for clients that read `rawReplies`.
 */
export function encodeReplyArgs(correlationId: string, packet: ReplyPacket | Uint8Array): (string | Buffer)[] {
  const value = packet instanceof Uint8Array ? asBuffer(packet) : stringifyPacket(packet);
  return [WireField.id, correlationId, WireField.packet, value];
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * `JSON.stringify(packet, errorsAsJson)`. A replacer costs a call per key of the response, so a
 * packet with no `Error` in it (the usual reply) is stringified without one: same output.
 */
function stringifyPacket(packet: ReplyPacket): string {
  return mayHoldError(packet, 0) ? JSON.stringify(packet, errorsAsJson) : JSON.stringify(packet);
}

/** True when `value` holds an Error, or something the plain walk cannot judge (toJSON, deep nesting). */
function mayHoldError(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (depth > 16 || value instanceof Error || typeof (value as { toJSON?: unknown }).toJSON === 'function') return true;
  if (Array.isArray(value)) {
    for (const item of value) if (mayHoldError(item, depth + 1)) return true;
    return false;
  }
  for (const key in value) {
    if (mayHoldError((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/**
 * Reply fields → `{ id, packet }`. Throws when the entry is not a reply of this wire format
 * (no `id`, no `packet`, or `packet` not a JSON object).
 */
export function decodeReply(fields: StreamFields): DecodedReply {
  const id = fields[WireField.id];
  if (typeof id !== 'string' || id.length === 0) throw new Error('reply entry has no "id" field');
  try {
    return { id, packet: decodeReplyPacket(fields[WireField.packet]) };
  } catch (error) {
    throw new Error(`reply entry ${id}: ${(error as Error).message}`);
  }
}

/** A reply's `packet` field → the packet. Throws: `no "packet" field`, `"packet" is not JSON: …`, `"packet" is not a JSON object`. */
export function decodeReplyPacket(raw: string | undefined): ReplyPacket {
  if (typeof raw !== 'string') throw new Error(`no "${WireField.packet}" field`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new Error(`"${WireField.packet}" is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`"${WireField.packet}" is not a JSON object`);
  }
  return parsed as ReplyPacket;
}

/** JSON drops `undefined` members by itself; an `Error` (own props not enumerable) keeps its message. */
function errorsAsJson(key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return key === 'err' ? { message: value.message, name: value.name } : { message: value.message };
  }
  return value;
}

/** Nest's NO_MESSAGE_HANDLER text: the error reply to a request no message handler matches. */
export const NO_MESSAGE_HANDLER = 'There is no matching message handler defined in the remote service.';
