import { Controller, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient, RedisStreamsOptionError, RedisStreamsRecord, RedisStreamsRecordBuilder, type RedisStreamsClientOptions } from '../../src/index.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer } from '../fixtures/server-app.js';
import { optionError } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const LANES = ['high', 'normal', 'low'];
const handled: { stream: string; n: number }[] = [];

@Controller()
class OrdersController {
  @EventPattern<string>('orders', { priorities: LANES })
  onOrder(@Payload() order: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), n: order.n });
  }

  @MessagePattern<string>('quotes', { priorities: ['urgent', 'later'] })
  quote(@Payload() item: string, @Ctx() ctx: RedisStreamsContext): string {
    return `${item}@${ctx.getStream()}`;
  }
}

/** The `n` of every entry of `stream`, as written. */
async function writtenTo(redis: { xrange(key: string, start: string, end: string): Promise<[string, string[]][]> }, stream: string): Promise<number[]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([, fields]) => (JSON.parse(fields[fields.indexOf('data') + 1] as string) as { n: number }).n);
}

describe('client priority option (pure)', () => {
  const base: RedisStreamsClientOptions = { connection: 'redis://127.0.0.1:1' };

  it('names each bad value "priorities.<pattern>"', () => {
    for (const lanes of [[], ['a', 'a'], ['a:b'], 'high', [1], Array.from({ length: 11 }, (_, i) => `l${i}`)]) {
      expect(optionError(() => new RedisStreamsClient({ ...base, priorities: { orders: lanes as string[] } })).option).toBe('priorities.orders');
    }
    expect(optionError(() => new RedisStreamsClient({ ...base, priorities: ['high'] as unknown as Record<string, string[]> })).option).toBe('priorities');
    const both = optionError(() => new RedisStreamsClient({ ...base, partitions: { orders: 2 }, priorities: { orders: ['high', 'low'] } }));
    expect(both.option).toBe('priorities.orders');
    expect(both.message).toContain('partitions');
  });

  it('lists the lanes\' streams, highest first, as the pattern\'s stream keys; the builder sets priority', () => {
    const client = new RedisStreamsClient({ ...base, streamPrefix: 'app:', priorities: { orders: LANES } });
    expect(client.streamKeysOf('orders')).toEqual(['app:orders:high', 'app:orders:normal', 'app:orders:low']);
    expect(client.streamKeysOf('other')).toEqual(['app:other']);
    expect(new RedisStreamsRecordBuilder({ n: 1 }).setPriority('high').build().options.priority).toBe('high');
  });
});

describe('client priority routing (real redis-server)', () => {
  const redis = useRedisServer();
  const opened: { close(): Promise<void> | void }[] = [];

  function client(options: RedisStreamsClientOptions = {}): RedisStreamsClient {
    const created = new RedisStreamsClient({ connection: redis.server.url, priorities: { orders: LANES, quotes: ['urgent', 'later'] }, ...options });
    opened.push(created);
    return created;
  }

  async function server(): Promise<INestMicroservice> {
    const { app } = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c1', blockMs: 100 }, [OrdersController]);
    opened.push(app);
    return app;
  }

  beforeEach(async () => {
    await redis.client.flushall();
    handled.length = 0;
  });

  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });

  it('an emit goes to <stream>:<priority>; without a priority to the middle lane; never to the stream itself', async () => {
    const producer = client();
    await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 1 }, { priority: 'high' })));
    await lastValueFrom(producer.emit('orders', new RedisStreamsRecordBuilder({ n: 2 }).setPriority('low').build()));
    await lastValueFrom(producer.emit('orders', { n: 3 }));
    await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 4 }, { raw: false })));
    expect(await writtenTo(redis.client, 'orders:high')).toEqual([1]);
    expect(await writtenTo(redis.client, 'orders:low')).toEqual([2]);
    expect(await writtenTo(redis.client, 'orders:normal')).toEqual([3, 4]);
    expect(await redis.client.exists('orders')).toBe(0);
  });

  it('a priority that is not a lane of the pattern, or on a pattern without lanes, fails the emit with an error naming "priority"; nothing is written', async () => {
    const producer = client();
    const notALane = await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 1 }, { priority: 'urgent' }))).catch((error: unknown) => error);
    expect(notALane).toBeInstanceOf(RedisStreamsOptionError);
    expect((notALane as RedisStreamsOptionError).option).toBe('priority');
    expect((notALane as Error).message).toContain('high, normal, low');
    const noLanes = await lastValueFrom(producer.emit('payments', new RedisStreamsRecord({ n: 1 }, { priority: 'high' }))).catch((error: unknown) => error);
    expect(noLanes).toBeInstanceOf(RedisStreamsOptionError);
    expect((noLanes as RedisStreamsOptionError).option).toBe('priority');
    expect((noLanes as Error).message).toContain('no priority lanes');
    expect(await redis.client.keys('*')).toEqual([]);
  });

  it('emits through the client reach the one handler of the lanes; a send() with a priority is answered from its lane', async () => {
    await server();
    const producer = client();
    for (let n = 0; n < 9; n++) await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n }, { priority: LANES[n % 3] as string })));
    await waitFor(() => handled.length >= 9, '9 orders handled');
    expect(handled.map(({ stream, n }) => `${stream}#${n}`).sort()).toEqual(
      Array.from({ length: 9 }, (_, n) => `orders:${LANES[n % 3] as string}#${n}`).sort(),
    );
    expect(await lastValueFrom(producer.send('quotes', new RedisStreamsRecord('tea', { priority: 'urgent' })))).toBe('tea@quotes:urgent');
    expect(await lastValueFrom(producer.send('quotes', 'coffee'))).toBe('coffee@quotes:later');
  });

  it('a delayed emit with a priority is held next to its lane and delivered from it', async () => {
    await server();
    const producer = client();
    await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n: 42 }, { priority: 'high', delay: 50 })));
    await waitFor(() => handled.length >= 1, 'the delayed order handled');
    expect(handled).toEqual([{ stream: 'orders:high', n: 42 }]);
  });
});
