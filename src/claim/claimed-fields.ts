import { fieldsFromArray, type StreamFields } from '../codec/wire-format.js';

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

/** An XAUTOCLAIM entry's flat `[f1, v1, …]` list in the requested format and encoding. */
export function claimedFields(
  flat: readonly (string | Buffer)[],
  format: FieldsFormat,
  encoding: FieldEncoding,
): StreamFields | StreamFieldPairs {
  const encoded = encoding === 'utf8' ? flat : flat.map(base64);
  if (format === 'object') return fieldsFromArray(encoded);
  const pairs: StreamFieldPairs = [];
  for (let i = 0; i + 1 < encoded.length; i += 2) pairs.push([String(encoded[i]), String(encoded[i + 1])]);
  return pairs;
}

function base64(value: string | Buffer): string {
  return (Buffer.isBuffer(value) ? value : Buffer.from(value, 'utf8')).toString('base64');
}
