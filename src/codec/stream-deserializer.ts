import { WireField, type Headers, type StreamFields } from './wire-format.js';

/** Where an entry came from, handed to the deserializer (and named in decode errors). */
export interface StreamEntryOrigin {
  readonly stream: string;
  readonly id: string;
}

/** What a deserializer makes of an entry. `id` + `replyTo` together mark a request. */
export interface DecodedEntry {
  /** The Nest pattern; when absent, the pattern of the handler bound to the stream is used. */
  pattern?: string;
  data: unknown;
  /** Correlation id of a request. */
  id?: string;
  /** Reply stream key of a request. */
  replyTo?: string;
  headers?: Headers;
}

/** Nest-style pluggable decoder of stream entries (server option `deserializer`). May be async. */
export interface StreamDeserializer {
  deserialize(fields: StreamFields, origin: StreamEntryOrigin): DecodedEntry | Promise<DecodedEntry>;
}

/** Fields of one entry, one at a time, or all as a map. */
export interface FieldSource {
  field(name: string): string | undefined;
  readonly fields: StreamFields;
}

/**
 * The default wire format (see wire-format.ts): `data` is JSON, `headers` a JSON object of strings,
 * `pattern`, `id` and `replyTo` plain strings. Throws (with a plain message) on anything else;
 * the server wraps that into a `RedisStreamsDecodeError` naming the stream and id.
 */
export class JsonStreamDeserializer implements StreamDeserializer {
  deserialize(fields: StreamFields): DecodedEntry {
    return this.decodeFields({ field: (name) => fields[name], fields });
  }

  /** Same as `deserialize`, reading fields one by one (entries whose map already exists). */
  decodeFields(source: FieldSource): DecodedEntry {
    const data = source.field(WireField.data);
    if (data === undefined) throw missingData(Object.keys(source.fields));
    return decodeWire(
      data,
      source.field(WireField.pattern),
      source.field(WireField.headers),
      source.field(WireField.id),
      source.field(WireField.replyTo),
    );
  }

  /**
   * Same as `deserialize`, over the `[f1, v1, …]` array as read: one pass, no field map (the
   * server's fast path). A repeated field: the last one wins, as in the map.
   */
  decodeFlat(flat: readonly string[]): DecodedEntry {
    let data: string | undefined;
    let pattern: string | undefined;
    let headers: string | undefined;
    let id: string | undefined;
    let replyTo: string | undefined;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const value = flat[i + 1];
      switch (flat[i]) {
        case WireField.data:
          data = value;
          break;
        case WireField.pattern:
          pattern = value;
          break;
        case WireField.headers:
          headers = value;
          break;
        case WireField.id:
          id = value;
          break;
        case WireField.replyTo:
          replyTo = value;
          break;
      }
    }
    if (data === undefined) throw missingData([...new Set(flat.filter((_, i) => i % 2 === 0 && i + 1 < flat.length))]);
    return decodeWire(data, pattern, headers, id, replyTo);
  }
}

function missingData(fieldNames: string[]): Error {
  const names = fieldNames.join(', ') || 'none';
  return new Error(`no "${WireField.data}" field (fields: ${names}); use extras.raw for foreign entries`);
}

function decodeWire(
  rawData: string,
  pattern: string | undefined,
  rawHeaders: string | undefined,
  id: string | undefined,
  replyTo: string | undefined,
): DecodedEntry {
  let data: unknown;
  try {
    data = JSON.parse(rawData);
  } catch (error) {
    throw new Error(`"${WireField.data}" is not JSON: ${(error as Error).message}`);
  }
  const decoded: DecodedEntry = { pattern, data };
  if (rawHeaders !== undefined) decoded.headers = parseHeaders(rawHeaders);
  if (id !== undefined) decoded.id = id;
  if (replyTo !== undefined) decoded.replyTo = replyTo;
  return decoded;
}

export function parseHeaders(raw: string): Headers {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new Error(`"${WireField.headers}" is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`"${WireField.headers}" is not a JSON object`);
  }
  const headers = Object.create(null) as Headers;
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    headers[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return headers;
}
