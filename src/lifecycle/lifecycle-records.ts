import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/**
 * How progress and kept results are stored: JSON text, Buffers (a raw or bytes handler's values)
 * as `{"$base64": "…"}` so they come back as Buffers. One encoding for the server that writes and
 * the client that reads.
 */

/** The latest `ctx.progress` value of an entry, as `client.progress` returns it. */
export interface EntryProgressRecord {
  readonly value: unknown;
  /** The delivery that reported it (1 on first delivery): a retry's progress replaces the earlier one's. */
  readonly delivery: number;
  /** When it was reported (ISO-8601, the worker's clock). */
  readonly at: string;
}

/** An entry's kept result (`extras.keepResults`): its handler's return value, or its error. */
export type EntryResultRecord =
  | { readonly state: 'done'; readonly value: unknown; readonly delivery: number; readonly at: string }
  | { readonly state: 'failed'; readonly error: { readonly name: string; readonly message: string }; readonly delivery: number; readonly at: string };

/** Largest progress value, as JSON bytes: progress is a small note, not a payload. */
export const MAX_PROGRESS_BYTES = 64 * 1024;

/** `ctx.progress(value)` refused: the value is not JSON-serializable, or larger than MAX_PROGRESS_BYTES as JSON. */
export class RedisStreamsProgressError extends Error {
  override readonly name = 'RedisStreamsProgressError';
}

export function encodeRecord(record: object): string {
  return JSON.stringify(record, (_key, value: unknown) => (isBufferJson(value) ? { $base64: Buffer.from(value.data).toString('base64') } : value));
}

/** The record kept in `key`; a record that is not ours (not JSON) throws an error naming `key`, so the entry. */
export function decodeRecord<T>(text: string | Buffer, key: string): T {
  try {
    return JSON.parse(String(text), (_key, value: unknown) =>
      value !== null && typeof value === 'object' && typeof (value as { $base64?: unknown }).$base64 === 'string' && Object.keys(value).length === 1
        ? Buffer.from((value as { $base64: string }).$base64, 'base64')
        : value,
    ) as T;
  } catch (error) {
    throw new Error(`Cannot decode the record "${key}": ${(error as Error).message}`, { cause: error });
  }
}

/** A progress record's text, checked: JSON-serializable, at most MAX_PROGRESS_BYTES. */
export function progressRecordText(value: unknown, delivery: number): string {
  let text: string | undefined;
  try {
    text = value === undefined ? undefined : encodeRecord({ value, delivery, at: new Date().toISOString() });
  } catch (error) {
    throw new RedisStreamsProgressError(`ctx.progress(value): the value is not JSON-serializable: ${(error as Error).message}`);
  }
  if (text === undefined) throw new RedisStreamsProgressError(`ctx.progress(value): the value must be JSON-serializable, got ${describe(value)}`);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_PROGRESS_BYTES) {
    throw new RedisStreamsProgressError(`ctx.progress(value): the value is ${bytes} bytes as JSON, over the cap of ${MAX_PROGRESS_BYTES}: report a small note (a count, a percentage), not the data`);
  }
  return text;
}

/** `extras.keepResults` / the server's `keepResults`: `{ ttl }` (ms or ISO-8601); `false` or absent: off. */
export interface KeepResultsOption {
  ttl: number | string;
}

function isBufferJson(value: unknown): value is { type: 'Buffer'; data: number[] } {
  return value !== null && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer' && Array.isArray((value as { data?: unknown }).data);
}

/** The TTL (ms) of a `keepResults` option, `undefined` when off. */
export function keepResultsTtl(option: string, value: unknown, timerDuration: (option: string, value: unknown) => number): number | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === null || typeof value !== 'object' || !('ttl' in value)) {
    throw new RedisStreamsOptionError(option, `must be { ttl } (ms or ISO-8601, how long a result is kept) or false, got ${describe(value)}`);
  }
  return timerDuration(`${option}.ttl`, (value as { ttl: unknown }).ttl);
}
