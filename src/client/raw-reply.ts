import { WireField } from '../codec/wire-format.js';

/**
 * A reply entry as stored, which a client with `rawReplies` hands to its deserializer instead of
 * parsing `packet` as JSON: for replies that are bytes (a server serializer that writes a Buffer,
 * a responder in another language). The deserializer returns `{ response?, err?, isDisposed? }`.
 */
export interface RawReply {
  /** The correlation id of the request it answers (the entry's `id` field), by which it was routed. */
  readonly id: string;
  /** The reply entry's id on the reply stream. */
  readonly entryId: string;
  /** The `packet` field's bytes (the last one, if repeated), or `undefined` when the entry has none. */
  readonly packet: Buffer | undefined;
  /** Every field of the entry, in stream order, byte for byte as stored. */
  readonly fields: readonly (readonly [name: Buffer, value: Buffer])[];
}

const PACKET = Buffer.from(WireField.packet);

/** The raw reply of an entry read as bytes (`[name, value, …]`). */
export function rawReplyOf(id: string, entryId: string, flat: readonly (string | Buffer)[]): RawReply {
  const fields: (readonly [Buffer, Buffer])[] = [];
  let packet: Buffer | undefined;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = asBuffer(flat[i] as string | Buffer);
    const value = asBuffer(flat[i + 1] as string | Buffer);
    fields.push([name, value]);
    if (name.equals(PACKET)) packet = value;
  }
  return { id, entryId, packet, fields };
}

function asBuffer(value: string | Buffer): Buffer {
  return typeof value === 'string' ? Buffer.from(value) : value;
}
