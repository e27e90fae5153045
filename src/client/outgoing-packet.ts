import type { OutgoingPacket } from './entry-fields.js';
import { RedisStreamsRecord, type RedisStreamsRecordOptions } from './redis-streams-record.js';

/** The options of plain data (no `RedisStreamsRecord`). */
export const EMPTY_OPTIONS: RedisStreamsRecordOptions = Object.freeze({});

/** The data and the per-call options of what `emit`/`send` were given. */
export function unwrapRecord(value: unknown): { data: unknown; options: RedisStreamsRecordOptions } {
  return value instanceof RedisStreamsRecord ? { data: value.data, options: value.options } : { data: value, options: EMPTY_OPTIONS };
}

/** Identity serializers hand the packet back; other serializers return a new packet (or just its data). */
export function serializedPacket(packet: OutgoingPacket, serialized: unknown): OutgoingPacket {
  if (serialized === packet) return packet;
  if (serialized !== null && typeof serialized === 'object' && 'data' in serialized) {
    return { ...packet, ...(serialized as Partial<OutgoingPacket>) };
  }
  return { ...packet, data: serialized };
}

export function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
