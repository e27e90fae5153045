import { WireField } from '../codec/wire-format.js';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/** The packet after the serializer: what one entry carries. */
export interface OutgoingPacket {
  readonly pattern: string;
  readonly data: unknown;
  readonly id?: string;
  readonly metadata?: Record<string, string>;
}

/**
 * Appends the fields of an event (`pattern`, `data`, `headers`?) or, with `id` and `replyTo`, of a
 * request to an XADD argument list. Headers are Nest dispatch metadata overlaid by the call's own.
 */
export function pushEntryFields(
  args: (string | Buffer)[],
  pattern: string,
  data: unknown,
  metadata: Record<string, string> | undefined,
  headers: Record<string, string> | undefined,
  id?: string,
  replyTo?: string,
): void {
  pushBodyFields(args, pattern, data);
  pushHeadersField(args, metadata, headers);
  if (id !== undefined && replyTo !== undefined) args.push(WireField.id, id, WireField.replyTo, replyTo);
}

/** `pattern` and `data` (JSON): the fields an entry carries whatever its headers. */
export function pushBodyFields(args: (string | Buffer)[], pattern: string, data: unknown): void {
  args.push(WireField.pattern, pattern, WireField.data, JSON.stringify(data) ?? 'null');
}

/** The `headers` field (JSON), when there are any. */
export function pushHeadersField(args: (string | Buffer)[], metadata: Record<string, string> | undefined, headers: Record<string, string> | undefined): void {
  const merged = mergeHeaders(metadata, headers);
  if (merged) args.push(WireField.headers, JSON.stringify(merged));
}

function mergeHeaders(
  metadata: Record<string, string> | undefined,
  headers: Record<string, string> | undefined,
): Record<string, string> | undefined {
  const hasMetadata = metadata !== undefined && Object.keys(metadata).length > 0;
  const hasHeaders = headers !== undefined && Object.keys(headers).length > 0;
  if (!hasMetadata) return hasHeaders ? headers : undefined;
  return hasHeaders ? { ...metadata, ...headers } : metadata;
}

/** Record headers must be a flat map of strings (they travel as one JSON object). */
export function validateHeaders(value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RedisStreamsOptionError('headers', `must be an object of string values, got ${describe(value)}`);
  }
  for (const [name, header] of Object.entries(value)) {
    if (typeof header !== 'string') {
      throw new RedisStreamsOptionError(`headers.${name}`, `must be a string, got ${describe(header)}`);
    }
  }
  return value as Record<string, string>;
}

/** Appends a raw field map to XADD arguments, exactly as given (numbers as decimal strings, Buffers as bytes). */
export function pushRawFields(args: (string | Buffer)[], data: unknown): void {
  if (data === null || typeof data !== 'object' || Array.isArray(data) || Buffer.isBuffer(data)) {
    throw new RedisStreamsOptionError('raw', `data of a raw record must be a field map, got ${describe(data)}`);
  }
  const start = args.length;
  for (const name of Object.keys(data)) {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value === 'string' || Buffer.isBuffer(value)) args.push(name, value);
    else if (typeof value === 'number' && Number.isFinite(value)) args.push(name, String(value));
    else {
      throw new RedisStreamsOptionError(`raw`, `field "${name}" must be a string, number or Buffer, got ${describe(value)}`);
    }
  }
  if (args.length === start) throw new RedisStreamsOptionError('raw', 'a raw record needs at least one field');
}
