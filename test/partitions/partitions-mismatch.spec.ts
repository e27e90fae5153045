import { Controller, type INestMicroservice, type Type } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient, RedisStreamsPartitionMismatchError, type RedisStreamsClientOptions } from '../../src/index.js';
import { REMEMBERED_PATTERNS } from '../../src/client/partition-router.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * One side partitions a stream, the other does not: the unpartitioned side would use `orders`
 * itself, which the other never touches. Both sides find out from the metadata key.
 */
@Controller()
class PartitionedController {
  @EventPattern<string>('orders', { partitions: 4 })
  onOrder(): void {}

  @MessagePattern<string>('quotes', { partitions: 3 })
  quote(@Payload() item: string): string {
    return item;
  }
}

@Controller()
class UnpartitionedController {
  @EventPattern<string>('orders')
  onOrder(): void {}
}

describe('partition mismatch when one side does not partition (real redis-server)', () => {
  const redis = useRedisServer();
  const opened: { close(): Promise<void> | void }[] = [];

  async function startServer(controllers: Type[]): Promise<INestMicroservice> {
    const moduleRef = await Test.createTestingModule({ controllers }).compile();
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'billing', consumer: 'c1', blockMs: 100, recovery: false });
    const app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    opened.push(app);
    await app.listen();
    return app;
  }

  function client(options: RedisStreamsClientOptions = {}): RedisStreamsClient {
    const created = new RedisStreamsClient({ connection: redis.server.url, ...options });
    opened.push(created);
    return created;
  }

  async function getCalls(): Promise<number> {
    const stats = await redis.client.info('commandstats');
    return Number(/cmdstat_get:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  }

  beforeEach(async () => {
    await redis.client.flushall();
  });

  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });

  it('a client without partitions for a partitioned pattern fails its emit and send by name and writes nothing', async () => {
    await startServer([PartitionedController]);
    const producer = client();
    const error = await lastValueFrom(producer.emit('orders', { n: 1 })).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RedisStreamsPartitionMismatchError);
    expect(error).toMatchObject({ stream: 'orders', partitions: 1, recorded: 4, metadataKey: '{orders}:partitions' });
    expect((error as Error).message).toMatch(/^stream "orders" is not partitioned here, but "\{orders\}:partitions" records 4 partitions \("orders:p0" …\)/);
    expect(await redis.client.exists('orders')).toBe(0);
    // A failed check is not remembered: the next emit checks (and fails) again.
    await expect(lastValueFrom(producer.emit('orders', { n: 2 }))).rejects.toBeInstanceOf(RedisStreamsPartitionMismatchError);
    expect(await redis.client.exists('orders')).toBe(0);
    const sendError = await lastValueFrom(producer.send('quotes', 'kettle')).catch((caught: unknown) => caught);
    expect(sendError).toMatchObject({ name: 'RedisStreamsPartitionMismatchError', stream: 'quotes', partitions: 1, recorded: 3 });
  });

  it('an unpartitioned pattern costs one GET of its metadata key per client, before its first XADD, then none', async () => {
    const producer = client();
    await producer.connect();
    await redis.client.config('RESETSTAT');
    const first = Array.from({ length: 20 }, (_, n) => lastValueFrom(producer.emit('plain', { n })));
    await Promise.all(first);
    for (let n = 0; n < 5; n++) await lastValueFrom(producer.emit('plain', { n }));
    await lastValueFrom(producer.emit('other', { n: 0 }));
    expect(await getCalls()).toBe(2); // one per pattern
    expect(await redis.client.xlen('plain')).toBe(25);
    // Reading does not write: an unpartitioned stream gets no metadata key.
    expect(await redis.client.exists('{plain}:partitions', '{other}:partitions')).toBe(0);
  });

  it('the client remembers the checks of the last REMEMBERED_PATTERNS patterns, not of every pattern it ever emitted to', async () => {
    const producer = client({ noMkStream: true }); // nothing is written: the streams do not exist
    const emitTo = (patterns: string[]) => Promise.all(patterns.map((pattern) => lastValueFrom(producer.emit(pattern, 1))));
    const patterns = Array.from({ length: REMEMBERED_PATTERNS + 1 }, (_, n) => `dynamic.${n}`);
    for (let from = 0; from < patterns.length; from += 1_000) await emitTo(patterns.slice(from, from + 1_000));
    await redis.client.config('RESETSTAT');
    await emitTo([patterns.at(-1)!]); // the newest: still remembered
    expect(await getCalls()).toBe(0);
    await emitTo([patterns[0]!]); // the oldest: forgotten, so checked again
    expect(await getCalls()).toBe(1);
  }, 60_000);

  it('a worker without extras.partitions on a stream recorded as partitioned fails listen() by name', async () => {
    await lastValueFrom(client({ partitions: { orders: 4 } }).emit('orders', { n: 1 }));
    const failed = await startServer([UnpartitionedController]).catch((caught: unknown) => caught);
    expect(failed).toBeInstanceOf(RedisStreamsPartitionMismatchError);
    expect(failed).toMatchObject({ stream: 'orders', partitions: 1, recorded: 4, metadataKey: '{orders}:partitions' });
  });

  it('an ACL without GET on the metadata key skips the check (with a warning) instead of failing every emit', async () => {
    await redis.client.call('ACL', 'SETUSER', 'oldrules', 'reset', 'on', '>oldrules-pw', '+@all', '-get', '~*');
    const url = new URL(redis.server.url);
    url.username = 'oldrules';
    url.password = 'oldrules-pw';
    const producer = client({ connection: url.toString() });
    expect(await lastValueFrom(producer.emit('plain', { n: 1 }))).toMatch(/^\d+-\d+$/);
    expect(await redis.client.xlen('plain')).toBe(1);
  });
});
