import { isUtf8 } from 'node:buffer';
import { fieldBase64 } from '../claim/claimed-fields.js';

/** Bytes of each field name and value a list sends (a refresh must not carry megabytes); the whole is fetched on demand. */
export const PREVIEW_BYTES = 1024;

/**
 * A field name or value as the page shows it: its text when its bytes are UTF-8, else its bytes
 * as base64 (as the CLI's `--encoding base64` writes them), marked so that nothing passes for
 * text that is not (no U+FFFD in place of a byte).
 */
export interface FieldText {
  /** The text, or the base64 of the bytes; of the first PREVIEW_BYTES bytes only when `truncated`. */
  text: string;
  encoding: 'utf8' | 'base64';
  /** Size of the whole name or value, in bytes. */
  bytes: number;
  /** `text` holds only its first bytes. */
  truncated: boolean;
}

/** One field: name and value. */
export type FieldView = [name: FieldText, value: FieldText];

/** `value` whole, or its first `limit` bytes (UTF-8 cut at a character's start). */
export function fieldText(value: Buffer, limit = Number.POSITIVE_INFINITY): FieldText {
  const utf8 = isUtf8(value);
  let end = Math.min(value.length, limit);
  // Never half a character: back to the first byte of the one the limit cuts.
  if (utf8) while (end > 0 && end < value.length && (value[end]! & 0xc0) === 0x80) end--;
  const shown = value.subarray(0, end);
  return { text: utf8 ? shown.toString('utf8') : fieldBase64(shown), encoding: utf8 ? 'utf8' : 'base64', bytes: value.length, truncated: end < value.length };
}

/** An entry's flat `[name, value, …]` bytes as fields, each name and value whole or cut to `limit` bytes. */
export function fieldViews(flat: readonly Buffer[], limit?: number): FieldView[] {
  const fields: FieldView[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) fields.push([fieldText(flat[i]!, limit), fieldText(flat[i + 1]!, limit)]);
  return fields;
}
