import { nonEmptyStringOption } from '../validation.js';

/**
 * The pattern of an emit, a send or a schedule, as Nest normalized it (an object pattern is its
 * JSON): a non-empty string, else a `RedisStreamsOptionError` naming `pattern`. An empty one names
 * no stream of its own (`""`, or the stream prefix alone), and a delayed emit's keys would be
 * `{}:delayed`, which is no hash tag: not in the stream's slot.
 */
export function checkPattern(pattern: unknown): string {
  return nonEmptyStringOption('pattern', pattern);
}
