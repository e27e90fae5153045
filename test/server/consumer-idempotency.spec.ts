import { Controller, type Type } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { idempotencyRecordKey } from '../../src/server/idempotency.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const runs = { byId: [] as string[], orders: [] as string[] };

@Controller()
class ById {
  @EventPattern<string>('events', { idempotency: true })
  onEvent(_data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    runs.byId.push(ctx.getId());
  }
}

@Controller()
class ByOrderId {
  @EventPattern<string>('orders', { idempotency: { key: (order: unknown) => (order as { orderId: string }).orderId, ttl: 'PT1H' } })
  onOrder(@Payload() order: { orderId: string }): void {
    runs.orders.push(order.orderId);
  }
}

describe('extras.idempotency: consumer-side idempotency (every Redis version)', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];
  const start = async (controllers: Type[], options: Partial<RedisStreamsServerOptions> = {}) => {
    const started = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 200, recovery: false, ...options }, controllers);
    running.push(started);
    return started;
  };
  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    runs.byId.length = runs.orders.length = 0;
    await redis.client.flushall();
  });

  it('rejects bad idempotency extras by name at listen()', async () => {
    @Controller()
    class Bad {
      @EventPattern<string>('bad', { idempotency: { key: 'orderId' as unknown as () => string } })
      on(): void {}
    }
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', recovery: false });
    const failure = await startServer({ connection: redis.server.url, group: 'g', recovery: false }, [Bad]).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RedisStreamsOptionError);
    expect((failure as Error).message).toMatch(/extras\.idempotency \(handler "bad"\)\.key": must be a function/);
    await server.close();
  });

  it('a group reset to 0 redelivers 50 handled entries: none runs again, all are acked, each id recorded with its TTL', async () => {
    const ids: string[] = [];
    for (let n = 0; n < 50; n++) ids.push((await xaddEvent(redis.client, 'events', 'events', { n })) as string);
    await start([ById]);
    await waitFor(async () => runs.byId.length === 50 && (await pendingCount(redis.client, 'events', 'g')) === 0, '50 entries handled and acked');
    for (const id of ids) {
      const ttl = await redis.client.pttl(idempotencyRecordKey('events', 'g', id));
      expect(ttl).toBeGreaterThan(23 * 3600 * 1000);
    }
    // Every entry is delivered again (what a group recreated at 0 does after it was lost).
    await redis.client.xgroup('SETID', 'events', 'g', '0');
    await waitFor(async () => {
      const info = (await redis.client.call('XINFO', 'GROUPS', 'events')) as unknown[][];
      const fields = info[0]!.map(String);
      return fields[fields.indexOf('last-delivered-id') + 1] === ids[49] && (await pendingCount(redis.client, 'events', 'g')) === 0;
    }, 'the 50 redelivered entries to be read and acked');
    await sleep(100);
    expect(runs.byId).toEqual(ids);
  });

  it('an entry redelivered by recovery whose key is recorded is acked without running the handler', async () => {
    const first = await start([ByOrderId]);
    // Order o-7 is handled: its key is recorded with the ack.
    await xaddEvent(redis.client, 'orders', 'orders', { orderId: 'o-7' });
    await waitFor(async () => runs.orders.length === 1 && (await pendingCount(redis.client, 'orders', 'g')) === 0, 'o-7 handled');
    const ttl = await redis.client.pttl(idempotencyRecordKey('orders', 'g', 'o-7'));
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
    await first.app.close();
    running.splice(0);
    // A producer's retry wrote o-7 again; a worker read it and crashed before its ack.
    const duplicate = (await xaddEvent(redis.client, 'orders', 'orders', { orderId: 'o-7' })) as string;
    await redis.client.xreadgroup('GROUP', 'g', 'crashed', 'COUNT', 1, 'STREAMS', 'orders', '>');
    await xaddEvent(redis.client, 'orders', 'orders', { orderId: 'o-8' });
    // Recovery takes the crashed worker's entry after minIdleTime: recorded key, so acked, not run.
    const recovered: unknown[] = [];
    const { server } = await start([ByOrderId], { recovery: { minIdleTime: 100, interval: 50 } });
    server.on('recovered', (notice) => recovered.push(notice));
    await waitFor(async () => recovered.length > 0 && (await pendingCount(redis.client, 'orders', 'g')) === 0, 'the duplicate to be recovered and acked');
    expect(recovered).toEqual([expect.objectContaining({ stream: 'orders', group: 'g', ids: [duplicate] })]);
    expect(runs.orders.sort()).toEqual(['o-7', 'o-8']);
  });
});
