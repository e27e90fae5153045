/**
 * The default wire format. An event or request is one stream entry whose fields are:
 *
 * | field     | present         | value                                            |
 * | --------- | --------------- | ------------------------------------------------ |
 * | `pattern` | always          | the Nest pattern, normalized to a string          |
 * | `data`    | always          | the payload as JSON                               |
 * | `headers` | when non-empty  | JSON object of string headers (Nest metadata too) |
 * | `id`      | requests        | correlation id of the request                     |
 * | `replyTo` | requests        | the requesting client's reply stream key          |
 *
 * A reply is one entry on the reply stream with `id` (the correlation id) and `packet` (the
 * Nest `WritePacket` — `response`, `err`, `isDisposed` — as JSON).
 *
 * Entries written by any other producer (redis-cli, Python) are read in raw mode instead: the
 * handler gets the field map as stored.
 */
export const WireField = {
  pattern: 'pattern',
  data: 'data',
  headers: 'headers',
  id: 'id',
  replyTo: 'replyTo',
  packet: 'packet',
} as const;

/** A stream entry's fields, in order, exactly as stored. */
export type StreamFields = Record<string, string>;

export type Headers = Record<string, string>;

/**
 * Turns ioredis' flat `[f1, v1, f2, v2]` array into a field map without prototype surprises:
 * a field called `__proto__` or `constructor` is an ordinary field.
 */
export function fieldsFromArray(flat: readonly (string | Buffer)[]): StreamFields {
  const fields = Object.create(null) as StreamFields;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    fields[String(flat[i])] = String(flat[i + 1]);
  }
  return fields;
}

/** Field map → the flat argument list XADD takes. */
export function fieldsToArray(fields: StreamFields): string[] {
  const flat: string[] = [];
  for (const name of Object.keys(fields)) {
    flat.push(name, fields[name] as string);
  }
  return flat;
}
