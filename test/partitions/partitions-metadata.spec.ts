import { Controller, type INestMicroservice, type Type } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DeadLetterService,
  RedisStreamsClient,
  RedisStreamsPartitionMetadataError,
  StreamClaimService,
  StreamInspectionService,
  type RedisStreamsClientOptions,
} from '../../src/index.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * `{orders}:partitions` holding what the package never writes (a count outside 1..1024, garbage,
 * another type): every reader of it fails with one clear error naming the key, instead of
 * building an array of 10^10 partition keys (`Invalid array length`, or the heap running out).
 */
const KEY = '{orders}:partitions';

/** Value written to the metadata key → the end of the error message. */
const BAD: [string, string][] = [
  ['10000000000', 'count 10000000000 is outside 1..1024'],
  ['100000000', 'count 100000000 is outside 1..1024'],
  ['1025', 'count 1025 is outside 1..1024'],
  ['0', 'count 0 is outside 1..1024'],
  ['-3', 'count -3 is outside 1..1024'],
  ['1.5', '"1.5" is not a partition count (an integer from 1 to 1024)'],
  ['abc', '"abc" is not a partition count (an integer from 1 to 1024)'],
  ['', '"" is not a partition count (an integer from 1 to 1024)'],
];

function expectMetadataError(error: unknown, detail: string): void {
  expect(error).toMatchObject({ name: 'RedisStreamsPartitionMetadataError', stream: 'orders', metadataKey: KEY });
  expect((error as Error).message).toMatch(new RegExp(`^invalid partition metadata in "\\{orders\\}:partitions": ${escape(detail)}`));
  expect((error as Error).message).not.toContain('\n');
  expect(error).toBeInstanceOf(RedisStreamsPartitionMetadataError);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

@Controller()
class PartitionedController {
  @EventPattern<string>('orders', { partitions: 4 })
  onOrder(): void {}
}

@Controller()
class UnpartitionedController {
  @EventPattern<string>('orders')
  onOrder(): void {}
}

describe('invalid partition metadata (real redis-server)', () => {
  const redis = useRedisServer();
  const opened: { close(): Promise<void> | void }[] = [];

  async function listenFailure(controllers: Type[]): Promise<unknown> {
    const moduleRef = await Test.createTestingModule({ controllers }).compile();
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'billing', consumer: 'c1', blockMs: 100, recovery: false });
    const app: INestMicroservice = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    opened.push(app);
    return app.listen().then(
      () => new Error('listen() succeeded'),
      (error: unknown) => error,
    );
  }

  function client(options: RedisStreamsClientOptions = {}): RedisStreamsClient {
    const created = new RedisStreamsClient({ connection: redis.server.url, ...options });
    opened.push(created);
    return created;
  }

  beforeEach(async () => {
    await redis.client.flushall();
  });

  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });

  it.each(BAD)('%j: the inspection, claim and dead-letter services fail naming the key', async (value, detail) => {
    await redis.client.set(KEY, value);
    const inspection = new StreamInspectionService(redis.client);
    const claims = new StreamClaimService(redis.client);
    const deadLetters = new DeadLetterService(redis.client);
    const failures = await Promise.all(
      [
        inspection.stream('orders'),
        inspection.groups('orders'),
        inspection.pendingSummary('orders', 'billing'),
        claims.claim({ key: 'orders', group: 'billing', consumer: 'c1', minIdleTime: 1 }),
        claims.ack('orders', 'billing', ['1-0']),
        deadLetters.list('orders'),
        deadLetters.size('orders'),
        deadLetters.purge('orders', 'all'),
      ].map((call) => call.then(() => new Error('succeeded'), (error: unknown) => error)),
    );
    for (const failure of failures) expectMetadataError(failure, detail);
  });

  it.each(BAD)('%j: a client fails the emit, partitioned or not, and writes nothing', async (value, detail) => {
    await redis.client.set(KEY, value);
    expectMetadataError(await lastValueFrom(client({ partitions: { orders: 4 } }).emit('orders', { n: 1 })).catch((e: unknown) => e), detail);
    expectMetadataError(await lastValueFrom(client().emit('orders', { n: 1 })).catch((e: unknown) => e), detail);
    expect(await redis.client.exists('orders', 'orders:p0', 'orders:p1', 'orders:p2', 'orders:p3')).toBe(0);
    expect(await redis.client.get(KEY)).toBe(value); // left for the operator to fix, not overwritten
  });

  it.each(BAD)('%j: a server fails listen(), partitioned or not', async (value, detail) => {
    await redis.client.set(KEY, value);
    expectMetadataError(await listenFailure([PartitionedController]), detail);
    expectMetadataError(await listenFailure([UnpartitionedController]), detail);
  });

  it('a metadata key of another type is invalid metadata too', async () => {
    await redis.client.hset(KEY, 'count', '4');
    const detail = 'it holds no string';
    expectMetadataError(await new StreamInspectionService(redis.client).stream('orders').catch((e: unknown) => e), detail);
    expectMetadataError(await new DeadLetterService(redis.client).list('orders').catch((e: unknown) => e), detail);
    expectMetadataError(await lastValueFrom(client({ partitions: { orders: 4 } }).emit('orders', { n: 1 })).catch((e: unknown) => e), detail);
    expectMetadataError(await lastValueFrom(client().emit('orders', { n: 1 })).catch((e: unknown) => e), detail);
    expectMetadataError(await listenFailure([PartitionedController]), detail);
  });

  it('a valid count still works: 1024 and 1 are read as they are', async () => {
    await redis.client.set(KEY, '1024');
    const error = await new StreamInspectionService(redis.client).stream('orders').catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'missing-stream', partitionKeys: expect.arrayContaining(['orders:p0', 'orders:p1023']) });
    await redis.client.set(KEY, '1');
    expect(await lastValueFrom(client().emit('orders', { n: 1 }))).toMatch(/^\d+-\d+$/);
  });
});
