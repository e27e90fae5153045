import type { MessageHandler } from '@nestjs/microservices';
import type { DecodedEntry, JsonStreamDeserializer, StreamDeserializer } from '../codec/stream-deserializer.js';
import { fieldsFromArray, type StreamFields } from '../codec/wire-format.js';
import type { DeliveryAbort } from '../lifecycle/delivery-abort.js';
import type { HandledStream } from './handled-stream.js';
import type { BindingLimits } from './binding-limits.js';
import type { EntryProgress } from '../lifecycle/lifecycle-writer.js';

/**
 * One handler bound to one stream and consumer group, with its options resolved once (never per
 * entry; handler-binding.ts builds them). It also carries its handler lane (handler-lanes.ts):
 * entries waiting for a free handler slot, and how many of its handlers run.
 */
export interface StreamBinding extends HandledStream {
  /** `stream` + NUL + `group`: the key of this binding and the prefix of its in-flight keys. */
  readonly key: string;
  readonly handler: MessageHandler;
  /** Handler lane: fetched entries not started yet, in arrival order. */
  readonly queue: InFlightEntry[];
  /** Handler lane: handlers of this binding running now. */
  running: number;
  /** Its shared limits' state (server-flow.ts), set once the server's flow control is built; `undefined` without limits. */
  limits: BindingLimits | undefined;
}

/** The server's decoder, and the same one when it is exactly the default (it decodes straight from the reply). */
export interface EntryDecoders {
  readonly decoder: StreamDeserializer;
  readonly defaultDecoder: JsonStreamDeserializer | undefined;
}

/**
 * An entry as read or claimed, before it is admitted (prefetch-slots.ts): its field map, or `flat`, the
 * `[f1, v1, f2, v2]` array as read (the map is then built only if someone asks for it).
 */
export interface IncomingEntry {
  readonly id: string;
  readonly fields?: StreamFields;
  /** Buffers when read as bytes (a group with an `extras.raw: 'buffers'` handler, recovery claims). */
  readonly flat?: readonly (string | Buffer)[];
  /** 1 for a fresh read (`>`); the count Redis reports for re-reads and claims. */
  readonly deliveryCount: number;
}

/** Queued: waiting for a handler slot. Running: its handler runs. Finished: handler done, waiting
 * for an ack or nack (manual mode) or for the ack batch to flush. */
export const EntryState = { Queued: 0, Running: 1, Finished: 2 } as const;
export type EntryState = (typeof EntryState)[keyof typeof EntryState];

const NO_FIELDS: readonly string[] = [];
/** Counts entries as they are created (admitted), for `InFlightEntry.admission`. */
let admissions = 0;

/** What an `extras.raw` handler gets: the map (`true`), text pairs (`'pairs'`) or byte pairs (`'buffers'`). */
export type RawFields = StreamFields | [name: string, value: string][] | [name: Buffer, value: Buffer][];

/** The fields of an `InFlightEntry` that few entries ever set (see `InFlightEntry.rare`). */
class RareState {
  rateKey: string | undefined = undefined;
  redelivery: IncomingEntry | undefined = undefined;
  handlerError: unknown = undefined;
  abort: DeliveryAbort | undefined = undefined;
  progress: EntryProgress | undefined = undefined;
  /** The fields as read, when read as bytes and the binding wants them (`raw: 'buffers'`). */
  bytes: readonly Buffer[] | undefined = undefined;
  needsStartToken: true | undefined = undefined;
}

/**
 * An entry this consumer fetched and has not yet acked, nacked or handed back. The prefetch slots
 * keep them per stream + group, by id, whatever source (read, own-PEL re-read, claim) fetched them.
 */
export class InFlightEntry {
  state: EntryState = EntryState.Queued;
  /** An ack or nack was requested (or done): later ack/nack calls are no-ops. */
  settled = false;
  /** The outcome of its ack, once one was requested (a second `ack()` returns it). */
  acked: Promise<void> | undefined;
  /** Its ack is queued or in flight (counted by the prefetch slots until the slot is released). */
  returning = false;
  /** It holds a prefetch slot and its bytes: set by `PrefetchSlots.admit`, cleared by the one release that frees them. */
  held = false;
  /** It holds one of its binding's `globalConcurrency` permits, given back when its slot is released. */
  permit = false;
  /** Its place in the prefetch slots' index while held (in-flight-index.ts), -1 otherwise. */
  indexSlot = -1;
  /** Its size as read (see `entryBytes`), counted against the server's `maxPrefetchBytes` until released. */
  readonly size: number;
  /** When it was admitted, in entries admitted before it: a pattern's priority lanes start their entries in this order (handler-lanes.ts). */
  readonly admission = admissions++;
  private map: StreamFields | undefined;
  private readonly flat: readonly string[];
  /**
   * What few entries have (a rate-limit key, a redelivery, a handler error, a signal, progress,
   * bytes), made on the first one set: every entry is allocated, kept through young-generation GCs
   * and freed at the rate entries are read, so fields most never use are not part of each one.
   */
  private rare: RareState | undefined = undefined;

  /** `flat` as read (a fresh read builds entries straight from its reply), or `fields` as handed over. */
  constructor(
    readonly binding: StreamBinding,
    readonly id: string,
    readonly deliveryCount: number,
    flat: readonly (string | Buffer)[] | undefined,
    fields?: StreamFields,
  ) {
    this.map = fields;
    const read = flat ?? NO_FIELDS;
    if (read.length === 0 || typeof read[0] === 'string') this.flat = read as readonly string[];
    else {
      // Read as bytes (the reply of a byte read or a recovery claim): text for everyone else.
      if (binding.raw === 'buffers') this.rareState(read).bytes = read as readonly Buffer[];
      this.flat = read.map(String);
    }
    this.size = flat !== undefined ? flatBytes(id, flat) : entryBytes({ id, fields, deliveryCount });
  }

  /** Its key under a per-key rate limit (`extras.rateLimit.key`), once it got a token of that key; else undefined. */
  get rateKey(): string | undefined {
    return this.rare?.rateKey;
  }

  set rateKey(key: string | undefined) {
    this.rareState(key).rateKey = key;
  }

  /**
   * The same id read again while its ack was under way (a group recreated at 0 delivers it anew):
   * the ack may not cover that delivery, so it is checked once the ack is done (`PrefetchSlots.release`).
   */
  get redelivery(): IncomingEntry | undefined {
    return this.rare?.redelivery;
  }

  set redelivery(incoming: IncomingEntry | undefined) {
    this.rareState(incoming).redelivery = incoming;
  }

  /** What its handler threw, as it left the handler (before Nest's exception filter replaced it). */
  get handlerError(): unknown {
    return this.rare?.handlerError;
  }

  set handlerError(error: unknown) {
    this.rareState(error).handlerError = error;
  }

  /** Its `ctx.signal` and time limit (lifecycle/delivery-abort.ts), made only when its handler reads the signal or has `extras.timeout`. */
  get abort(): DeliveryAbort | undefined {
    return this.rare?.abort;
  }

  set abort(abort: DeliveryAbort | undefined) {
    this.rareState(abort).abort = abort;
  }

  /** Its `ctx.progress` reports (lifecycle/lifecycle-writer.ts), made on the first one. */
  get progress(): EntryProgress | undefined {
    return this.rare?.progress;
  }

  set progress(progress: EntryProgress | undefined) {
    this.rareState(progress).progress = progress;
  }

  /**
   * Its read's rate-limit token went back while it waited for a handler (start-tokens.ts): it
   * takes a fresh one before its handler starts.
   */
  get needsStartToken(): boolean {
    return this.rare?.needsStartToken === true;
  }

  set needsStartToken(needs: boolean) {
    this.rareState(needs || undefined).needsStartToken = needs || undefined;
  }

  /** The rare fields, made when a value other than undefined is first set (setting undefined on none keeps none). */
  private rareState(value: unknown): RareState {
    if (this.rare !== undefined) return this.rare;
    const rare = new RareState();
    if (value !== undefined) this.rare = rare;
    return rare;
  }

  /** The fields exactly as stored (null-prototype map), built on first use. */
  get fields(): StreamFields {
    this.map ??= fieldsFromArray(this.flat);
    return this.map;
  }

  /** What a raw handler gets, per `binding.raw`: the map, or `[name, value]` pairs in stream order (text or bytes). */
  rawFields(): RawFields {
    const { raw } = this.binding;
    if (raw !== 'pairs' && raw !== 'buffers') return this.fields;
    // An entry handed over as a map (internal API) has its map's order; a read one, the stream's.
    const flat: readonly (string | Buffer)[] =
      raw === 'buffers' && this.rare?.bytes !== undefined ? this.rare.bytes : this.flat.length > 0 || this.map === undefined ? this.flat : Object.entries(this.map).flat();
    const pairs: [string | Buffer, string | Buffer][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const name = flat[i] as string | Buffer;
      const value = flat[i + 1] as string | Buffer;
      pairs.push(raw === 'buffers' ? [asBuffer(name), asBuffer(value)] : [String(name), String(value)]);
    }
    return pairs as RawFields;
  }

  /**
   * What its handler gets: the raw fields (`extras.raw`), else the decoder's result. The default
   * format reads its few fields straight from the reply (no field map per entry); a custom decoder
   * gets the map and may return a promise. Throws what a synchronous decode threw.
   */
  decode({ decoder, defaultDecoder }: EntryDecoders): DecodedEntry | Promise<DecodedEntry> {
    if (this.binding.raw) return { data: this.rawFields() };
    if (defaultDecoder === undefined) return decoder.deserialize(this.fields, { stream: this.binding.stream, id: this.id });
    const flat = this.flatFields();
    return flat !== undefined ? defaultDecoder.decodeFlat(flat) : defaultDecoder.decodeFields(this);
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

function asBuffer(value: string | Buffer): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

/**
 * The size of an entry as the reader holds it: the lengths of its id, field names and values
 * (characters of a string, bytes of a Buffer), without any command. For ASCII/JSON payloads it is
 * their byte size; the JS objects around them are the fixed per-entry overhead of docs/server.md.
 */
export function entryBytes(incoming: IncomingEntry): number {
  if (incoming.flat !== undefined) return flatBytes(incoming.id, incoming.flat);
  let bytes = incoming.id.length;
  const fields = incoming.fields;
  if (fields !== undefined) for (const name in fields) bytes += name.length + (fields[name] as string).length;
  return bytes;
}

/** `entryBytes` of an entry read as `[f1, v1, …]`. */
function flatBytes(id: string, flat: readonly (string | Buffer)[]): number {
  let bytes = id.length;
  for (let i = 0; i < flat.length; i++) bytes += (flat[i] as string).length;
  return bytes;
}
