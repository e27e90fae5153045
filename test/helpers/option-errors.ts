import type { Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { ourClients } from '../helpers/stream-state.js';

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

/**
 * A Nest microservice of `controller` on a `RedisStreamsServer` at `url`: its `listen()` must fail
 * with a `RedisStreamsOptionError` naming `option`, before any command reached Redis (`untouchedKey`
 * does not exist and no connection of ours is open; `admin` looks).
 */
export async function expectListenOptionError(controller: Type<unknown>, url: string, option: string, admin: Redis, untouchedKey: string): Promise<void> {
  const moduleRef = await Test.createTestingModule({ controllers: [controller] }).compile();
  const app = moduleRef.createNestMicroservice({ strategy: new RedisStreamsServer({ connection: url, group: 'g' }), logger: false });
  try {
    const error = await app.listen().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect((error as RedisStreamsOptionError).option).toBe(option);
    expect(await admin.exists(untouchedKey)).toBe(0);
    expect(await ourClients(admin)).toEqual([]);
  } finally {
    await app.close();
  }
}
