import { fieldsFromArray, type StreamFields } from '../codec/wire-format.js';
import type { StreamBinding } from './handler-binding.js';

/**
 * An entry as read or claimed, before it enters the dispatcher: its field map, or `flat`, the
 * `[f1, v1, f2, v2]` array as read (the map is then built only if someone asks for it).
 */
export interface IncomingEntry {
  readonly id: string;
  readonly fields?: StreamFields;
  readonly flat?: readonly string[];
  /** 1 for a fresh read (`>`); the count Redis reports for re-reads and claims. */
  readonly deliveryCount: number;
}

/** Queued: waiting for a handler slot. Running: its handler runs. Finished: handler done, waiting
 * for an ack or nack (manual mode) or for the ack batch to flush. */
export const EntryState = { Queued: 0, Running: 1, Finished: 2 } as const;
export type EntryState = (typeof EntryState)[keyof typeof EntryState];

const NO_FIELDS: readonly string[] = [];

/**
 * An entry this consumer fetched and has not yet acked, nacked or handed back. The dispatcher
 * keeps them per stream + group, by id, whatever source (read, own-PEL re-read, claim) fetched them.
 */
export class InFlightEntry {
  state: EntryState = EntryState.Queued;
  /** An ack or nack was requested (or done): later ack/nack calls are no-ops. */
  settled = false;
  /** The outcome of its ack, once one was requested (a second `ack()` returns it). */
  acked: Promise<void> | undefined;
  /** Its ack is queued or in flight (counted by the dispatcher until the slot is released). */
  returning = false;
  /** Its size as read (see `entryBytes`), counted against the server's `maxPrefetchBytes` until released. */
  readonly bytes: number;
  private map: StreamFields | undefined;
  private readonly flat: readonly string[];

  constructor(
    readonly binding: StreamBinding,
    readonly id: string,
    readonly deliveryCount: number,
    incoming: IncomingEntry,
  ) {
    this.map = incoming.fields;
    this.flat = incoming.flat ?? NO_FIELDS;
    this.bytes = entryBytes(incoming);
  }

  /** The fields exactly as stored (null-prototype map), built on first use. */
  get fields(): StreamFields {
    this.map ??= fieldsFromArray(this.flat);
    return this.map;
  }

  /** The `[f1, v1, …]` array as read, while no field map was built or given (undefined then). */
  flatFields(): readonly string[] | undefined {
    return this.map === undefined ? this.flat : undefined;
  }

  /** One field's value without building the map (the last one wins, as in the map). */
  field(name: string): string | undefined {
    if (this.map !== undefined) return this.map[name];
    let value: string | undefined;
    for (let i = 0; i + 1 < this.flat.length; i += 2) {
      if (this.flat[i] === name) value = this.flat[i + 1];
    }
    return value;
  }
}

/**
 * The size of an entry as the reader holds it: the lengths of its id, field names and values
 * (characters of a string, bytes of a Buffer), without any command. For ASCII/JSON payloads it is
 * their byte size; the JS objects around them are the fixed per-entry overhead of docs/server.md.
 */
export function entryBytes(incoming: IncomingEntry): number {
  let bytes = incoming.id.length;
  const flat = incoming.flat;
  if (flat !== undefined) {
    for (let i = 0; i < flat.length; i++) bytes += (flat[i] as string).length;
    return bytes;
  }
  const fields = incoming.fields;
  if (fields !== undefined) for (const name in fields) bytes += name.length + (fields[name] as string).length;
  return bytes;
}
