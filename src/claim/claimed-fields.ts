import { fieldsFromArray, type StreamFields } from '../codec/wire-format.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

export const FIELDS_FORMATS = ['object', 'pairs'] as const;
/**
 * `object`: `{ name: value }` (a JavaScript object lists integer-like names such as `10` first, in
 * ascending order, and of two fields with one name keeps the last); `pairs`: `[[name, value], …]`
 * in stream order with every duplicate, byte for byte what XADD stored.
 */
export type FieldsFormat = (typeof FIELDS_FORMATS)[number];

export const FIELD_ENCODINGS = ['utf8', 'base64'] as const;
/** `utf8`: names and values as text (bytes that are not UTF-8 become U+FFFD); `base64`: names and values as base64 of their exact bytes. */
export type FieldEncoding = (typeof FIELD_ENCODINGS)[number];

/** A claimed entry's fields in `pairs` form: `[name, value]` in stream order, duplicates kept. */
export type StreamFieldPairs = [name: string, value: string][];

/** How entries' fields are handed out: the claim's and the dead-letter service's `fieldsFormat` and `encoding`. */
export interface FieldsShape {
  readonly fieldsFormat: FieldsFormat;
  readonly encoding: FieldEncoding;
}

export const DEFAULT_FIELDS_SHAPE: FieldsShape = { fieldsFormat: 'object', encoding: 'utf8' };

/** Validated `fieldsFormat` and `encoding` of an options object (RedisStreamsOptionError naming the bad one). */
export function resolveFieldsShape(options: { fieldsFormat?: unknown; encoding?: unknown }): FieldsShape {
  return {
    fieldsFormat: oneOfOption('fieldsFormat', options.fieldsFormat, FIELDS_FORMATS, DEFAULT_FIELDS_SHAPE.fieldsFormat),
    encoding: oneOfOption('encoding', options.encoding, FIELD_ENCODINGS, DEFAULT_FIELDS_SHAPE.encoding),
  };
}

function oneOfOption<T extends string>(option: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new RedisStreamsOptionError(option, `must be one of ${allowed.join(', ')}; got ${describe(value)}`);
}

/** An XAUTOCLAIM entry's flat `[f1, v1, …]` list in the requested format and encoding. */
export function claimedFields(
  flat: readonly (string | Buffer)[],
  format: FieldsFormat,
  encoding: FieldEncoding,
): StreamFields | StreamFieldPairs {
  const encoded = encoding === 'utf8' ? flat : flat.map(fieldBase64);
  if (format === 'object') return fieldsFromArray(encoded);
  const pairs: StreamFieldPairs = [];
  for (let i = 0; i + 1 < encoded.length; i += 2) pairs.push([String(encoded[i]), String(encoded[i + 1])]);
  return pairs;
}

/** `encoding: 'base64'`: a name's or value's exact bytes as base64 (the CLI's `--encoding base64`, the dashboard's bytes that are not UTF-8). */
export function fieldBase64(value: string | Buffer): string {
  return (Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8')).toString('base64');
}
