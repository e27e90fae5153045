import { SetMetadata } from '@nestjs/common';

/** Metadata key of `@OnDeadLetter()` methods. */
export const ON_DEAD_LETTER = Symbol.for('nestjs-redis-streams:on-dead-letter');

export interface OnDeadLetterMetadata {
  /** Only dead letters of this handler pattern (or this stream key); every one when undefined. */
  readonly pattern: string | undefined;
}

/**
 * Marks a method of any provider or controller to be called with each dead letter (a
 * `DeadLetterNotice`) the `RedisStreamsServer`s of this process write, as the `onDeadLetter`
 * option is: max deliveries, decode errors, trimmed tombstones. `pattern` keeps only the dead
 * letters of that handler pattern (or stream key). Needs `RedisStreamsModule` imported in the app,
 * which finds these methods at start-up. Errors the method throws are logged.
 */
export function OnDeadLetter(pattern?: string): MethodDecorator {
  return SetMetadata(ON_DEAD_LETTER, { pattern } satisfies OnDeadLetterMetadata);
}
