import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/** Longest field name, value or substring a filter takes. */
export const MAX_MATCH_BYTES = 4096;

/**
 * Which entries (or dead letters, by their original fields) a find or a filter-wide bulk action
 * takes: those with a field `field` whose value is exactly `value`, or those with a field value
 * that contains `contains`. Compared byte for byte (UTF-8 of what was typed).
 */
export type EntryMatch = { readonly field: string; readonly value: string } | { readonly contains: string };

/** The filter of a request (`field` + `value`, or `contains`), checked; undefined when it names none. */
export function optionalMatchParameter(request: { field?: unknown; value?: unknown; contains?: unknown }): EntryMatch | undefined {
  const { field, value, contains } = request;
  if (field === undefined && value === undefined && contains === undefined) return undefined;
  if (contains !== undefined) {
    if (field !== undefined || value !== undefined) throw new RedisStreamsOptionError('contains', 'give either field and value, or contains, not both');
    return { contains: matchText('contains', contains, 1) };
  }
  return { field: matchText('field', field, 1), value: matchText('value', value, 0) };
}

/** The filter of a request, which must name one. */
export function matchParameter(request: { field?: unknown; value?: unknown; contains?: unknown }): EntryMatch {
  const match = optionalMatchParameter(request);
  if (match === undefined) throw new RedisStreamsOptionError('field', 'name a field and its value, or give contains');
  return match;
}

/** A compiled filter: whether an entry's flat `[name, value, …]` bytes match. */
export function entryMatcher(match: EntryMatch): (flat: readonly Buffer[]) => boolean {
  if ('contains' in match) {
    const needle = Buffer.from(match.contains, 'utf8');
    return (flat) => {
      for (let i = 1; i < flat.length; i += 2) if (flat[i]!.includes(needle)) return true;
      return false;
    };
  }
  const field = Buffer.from(match.field, 'utf8');
  const value = Buffer.from(match.value, 'utf8');
  return (flat) => {
    for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i]!.equals(field) && flat[i + 1]!.equals(value)) return true;
    return false;
  };
}

function matchText(option: string, value: unknown, minLength: number): string {
  if (typeof value !== 'string' || value.length < minLength || Buffer.byteLength(value) > MAX_MATCH_BYTES) {
    throw new RedisStreamsOptionError(option, `must be a string of ${minLength} to ${MAX_MATCH_BYTES} bytes, got ${describe(value)}`);
  }
  return value;
}
