import { expect } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';

/** Runs `build`, which must throw a `RedisStreamsOptionError`, and returns that error. */
export function optionError(build: () => unknown): RedisStreamsOptionError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    return error as RedisStreamsOptionError;
  }
  throw new Error('expected a RedisStreamsOptionError');
}

/** Server options whose Redis is never contacted: a bad option must fail the constructor first. */
export const UNCONTACTED_SERVER: RedisStreamsServerOptions = { connection: 'redis://127.0.0.1:1', group: 'g' };
