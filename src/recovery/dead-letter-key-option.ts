import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';

/**
 * How a stream's dead-letter key is named: a function `(stream) => key`, or a template in which
 * every `%s` stands for the stream key (`'{%s}:dlq'`). The template form is the one the CLI takes
 * too (`--dead-letter-key '{%s}:dlq'`), so code and command line can share the very same setting.
 */
export type DeadLetterKeySetting = string | ((stream: string) => string);

export const STREAM_PLACEHOLDER = '%s';

/** Validates a `DeadLetterKeySetting` into a function (undefined when not given). */
export function deadLetterKeyOption(option: string, value: unknown): ((stream: string) => string) | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'function') return value as (stream: string) => string;
  if (typeof value === 'string' && value.includes(STREAM_PLACEHOLDER)) return (stream) => fillTemplate(value, stream);
  throw new RedisStreamsOptionError(
    option,
    `must be a function (stream) => key or a template holding "${STREAM_PLACEHOLDER}" for the stream key, got ${describe(value)}`,
  );
}

/** `template` with every `%s` replaced by `stream`; a string without `%s` is returned as given (a literal key). */
export function fillTemplate(template: string, stream: string): string {
  return template.split(STREAM_PLACEHOLDER).join(stream);
}
