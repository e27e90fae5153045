import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { ourClients, pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

interface Seen {
  data: unknown;
  stream: string;
  id: string;
  group: string;
  consumer: string;
  deliveryCount: number;
  fields: Record<string, string>;
  headers: Record<string, string>;
}
const seen: Record<string, Seen[]> = {};
function record(name: string, data: unknown, ctx: RedisStreamsContext): void {
  (seen[name] ??= []).push({
    data,
    stream: ctx.getStream(),
    id: ctx.getId(),
    group: ctx.getGroup(),
    consumer: ctx.getConsumer(),
    deliveryCount: ctx.getDeliveryCount(),
    fields: { ...ctx.getFields() },
    headers: { ...ctx.getHeaders() },
  });
}

@Controller()
class EventsController {
  @EventPattern<string>('orders')
  onOrder(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('orders', data, ctx);
  }

  @EventPattern<string>('legacy', { raw: true })
  async onLegacy(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    await Promise.resolve();
    record('legacy', data, ctx);
  }

  @EventPattern<string>('early')
  onEarly(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('early', data, ctx);
  }
}

describe('RedisStreamsServer: events', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  afterEach(async () => {
    await running?.app.close();
    running = undefined;
  });

  it('hands default-codec events and raw redis-cli entries to their handlers and acks them', async () => {
    running = await startServer({ connection: redis.server.url, group: 'workers', consumer: 'w1' }, [EventsController]);
    const orderId = await redis.client.xadd('orders', '*', 'pattern', 'orders', 'data', JSON.stringify({ item: 'kettle', qty: 1 }), 'headers', JSON.stringify({ trace: 'abc' }));
    const rawId = await redis.client.xadd('legacy', '*', 'item', 'kettle', 'qty', '1');

    await waitFor(() => (seen.orders?.length ?? 0) >= 1 && (seen.legacy?.length ?? 0) >= 1, 'both handlers');
    expect(seen.orders).toEqual([
      {
        data: { item: 'kettle', qty: 1 },
        stream: 'orders',
        id: orderId,
        group: 'workers',
        consumer: 'w1',
        deliveryCount: 1,
        fields: { pattern: 'orders', data: '{"item":"kettle","qty":1}', headers: '{"trace":"abc"}' },
        headers: { trace: 'abc' },
      },
    ]);
    expect(seen.legacy).toHaveLength(1);
    expect(seen.legacy?.[0]?.id).toBe(rawId);
    expect({ ...(seen.legacy?.[0]?.data as object) }).toEqual({ item: 'kettle', qty: '1' });
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'workers')) === 0, 'orders acked');
    await waitFor(async () => (await pendingCount(redis.client, 'legacy', 'workers')) === 0, 'legacy acked');
  });

  it('consumes entries written before the first worker started (group created at 0)', async () => {
    const ids = [
      await xaddEvent(redis.client, 'early', 'early', { n: 1 }),
      await xaddEvent(redis.client, 'early', 'early', { n: 2 }),
    ];
    expect(await redis.client.exists('early')).toBe(1);
    running = await startServer({ connection: redis.server.url, group: 'late-starters', consumer: 'w1' }, [EventsController]);
    await waitFor(() => (seen.early?.length ?? 0) >= 2, 'both early entries');
    expect(seen.early?.map((s) => s.id)).toEqual(ids);
    expect(seen.early?.map((s) => s.data)).toEqual([{ n: 1 }, { n: 2 }]);
    await waitFor(async () => (await pendingCount(redis.client, 'early', 'late-starters')) === 0, 'early acked');
  });

  it('close() leaves none of its connections open and reports disconnected', async () => {
    running = await startServer({ connection: redis.server.url, group: 'workers', consumer: 'w-close' }, [EventsController]);
    const statuses: string[] = [];
    running.server.status.subscribe((status) => statuses.push(status));
    await waitFor(() => statuses.includes('connected'), 'connected status');
    expect((await ourClients(redis.client)).length).toBeGreaterThan(0);
    await running.app.close();
    running = undefined;
    expect(await ourClients(redis.client)).toEqual([]);
    expect(statuses.at(-1)).toBe('disconnected');
  });
});
