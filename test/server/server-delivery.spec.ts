import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const load = { running: 0, maxRunning: 0, handled: [] as Array<{ consumer: string; group: string; n: number }> };

@Controller()
class LoadController {
  @EventPattern<string>('load')
  async onLoad(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    load.running++;
    load.maxRunning = Math.max(load.maxRunning, load.running);
    await sleep(1 + (data.n % 4));
    load.running--;
    load.handled.push({ consumer: ctx.getConsumer(), group: ctx.getGroup(), n: data.n });
  }
}

const manual = { acked: [] as string[], seen: [] as string[] };

@Controller()
class ManualController {
  @EventPattern<string>('manual', { ackMode: 'manual' })
  async onManual(@Payload() data: { action: 'ack' | 'nack' | 'keep' }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    manual.seen.push(ctx.getId());
    if (data.action === 'ack') {
      await ctx.ack();
      manual.acked.push(ctx.getId());
    } else if (data.action === 'nack') {
      ctx.nack();
    }
  }
}

async function addLoad(client: Redis, stream: string, count: number): Promise<string[]> {
  const pipeline = client.pipeline();
  for (let n = 0; n < count; n++) pipeline.xadd(stream, '*', 'pattern', 'load', 'data', JSON.stringify({ n }));
  const results = (await pipeline.exec()) ?? [];
  return results.map(([, id]) => id as string);
}

describe('RedisStreamsServer: delivery', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    load.running = 0;
    load.maxRunning = 0;
    load.handled = [];
  });

  it('never runs more than `concurrency` handlers nor holds more than `prefetch` pending entries', async () => {
    const concurrency = 4;
    const prefetch = 10;
    running.push(await startServer({ connection: redis.server.url, prefix: 'b:', group: 'g', consumer: 'bounded', concurrency, prefetch }, [LoadController]));
    const total = 300;
    await addLoad(redis.client, 'b:load', total);
    let maxPending = 0;
    while (load.handled.length < total) {
      const summary = (await redis.client.xpending('b:load', 'g')) as [number, string | null, string | null, Array<[string, string]> | null];
      const mine = summary[3]?.find(([consumer]) => consumer === 'bounded');
      maxPending = Math.max(maxPending, Number(mine?.[1] ?? 0));
      await sleep(2);
    }
    expect(load.maxRunning).toBe(concurrency);
    expect(maxPending).toBeLessThanOrEqual(prefetch);
    expect(maxPending).toBeGreaterThan(concurrency);
    expect(new Set(load.handled.map((h) => h.n)).size).toBe(total);
    await waitFor(async () => (await pendingRows(redis.client, 'b:load', 'g')).length === 0, 'all acked');
  });

  it('two servers in one group split the work and handle no entry twice', async () => {
    const base = { connection: redis.server.url, prefix: 'split:', group: 'shared', concurrency: 4, prefetch: 8 };
    running.push(await startServer({ ...base, consumer: 'a' }, [LoadController]));
    running.push(await startServer({ ...base, consumer: 'b' }, [LoadController]));
    const total = 400;
    await addLoad(redis.client, 'split:load', total);
    await waitFor(() => load.handled.length >= total, 'every entry handled');
    await waitFor(async () => (await pendingRows(redis.client, 'split:load', 'shared')).length === 0, 'all acked');
    expect(load.handled).toHaveLength(total);
    expect(new Set(load.handled.map((h) => h.n)).size).toBe(total);
    expect(load.handled.filter((h) => h.consumer === 'a').length).toBeGreaterThan(0);
    expect(load.handled.filter((h) => h.consumer === 'b').length).toBeGreaterThan(0);
  });

  it('two groups on one stream each receive every entry', async () => {
    const base = { connection: redis.server.url, prefix: 'fan:', consumer: 'c1' };
    running.push(await startServer({ ...base, group: 'billing' }, [LoadController]));
    running.push(await startServer({ ...base, group: 'shipping' }, [LoadController]));
    const total = 50;
    await addLoad(redis.client, 'fan:load', total);
    await waitFor(() => load.handled.length >= 2 * total, 'both groups handled everything');
    for (const group of ['billing', 'shipping']) {
      const ns = load.handled.filter((h) => h.group === group).map((h) => h.n);
      expect(ns.sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, i) => i));
    }
  });

  it('manual ack mode: ctx.ack() acks, ctx.nack() leaves the entry pending and frees its slot', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'm', consumer: 'm1', concurrency: 1, prefetch: 1 }, [ManualController]));
    const add = async (action: string) => (await redis.client.xadd('manual', '*', 'pattern', 'manual', 'data', JSON.stringify({ action }))) as string;
    const ackId = await add('ack');
    const nackId = await add('nack');
    const ack2 = await add('ack');
    // prefetch 1: the third entry only arrives if ack() and nack() freed the single slot.
    await waitFor(() => manual.acked.length === 2, 'both acks');
    expect(manual.seen).toEqual([ackId, nackId, ack2]);
    expect(manual.acked).toEqual([ackId, ack2]);
    expect((await pendingRows(redis.client, 'manual', 'm')).map((row) => row.id)).toEqual([nackId]);

    // An entry neither acked nor nacked keeps its slot (and stays pending).
    const keepId = await add('keep');
    const after = await add('ack');
    await waitFor(() => manual.seen.includes(keepId), 'kept entry seen');
    await sleep(50);
    expect(manual.seen).not.toContain(after);
    expect((await pendingRows(redis.client, 'manual', 'm')).map((row) => row.id)).toEqual([nackId, keepId]);
  });
});
