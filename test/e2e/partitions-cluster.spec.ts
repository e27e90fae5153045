import { Controller, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { partitionStreamKeys } from '../../src/partitions/partition-keys.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';

const PARTITIONS = 6;
const handled = new Map<number, string>();

@Controller()
class OrdersController {
  @EventPattern<string>('orders', { partitions: PARTITIONS })
  onOrder(@Payload() n: number, @Ctx() ctx: RedisStreamsContext): void {
    handled.set(n, ctx.getStream());
  }
}

describe('partitioned streams on a 3-master Redis Cluster', () => {
  const harness = useRedisCluster({ replicas: 0 });
  const opened: { close(): Promise<void> }[] = [];

  afterAll(async () => {
    for (const item of opened.reverse()) await item.close();
  });

  it('one pattern over 6 partitions lands on every master and every id is consumed, nothing pending', async () => {
    const { cluster } = harness;
    const connection = { cluster: { nodes: cluster.urls } };
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController] }).compile();
    const app: INestMicroservice = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({ connection, group: 'billing', consumer: 'c1', blockMs: 100 }),
      logger: false,
    });
    opened.push(app);
    await app.listen();
    const producer = new RedisStreamsClient({ connection, partitions: { orders: PARTITIONS } });
    opened.push(producer);

    const ids = await Promise.all(Array.from({ length: 300 }, (_, n) => lastValueFrom(producer.emit<string>('orders', n))));
    // Entry ids are per stream: two partitions may hold the same id, so they are compared as a multiset below.
    const written: string[] = [];
    await waitFor(() => handled.size === 300, '300 orders handled', { timeout: 20_000 });
    expect([...handled.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 300 }, (_, n) => n));

    // Each partition lives on the master of its slot: asked of that node directly (no redirection), 50 entries each.
    const keys = partitionStreamKeys('orders', PARTITIONS);
    const masters = await Promise.all(keys.map((key) => cluster.masterOf(hashSlotOf(key))));
    expect(new Set(masters.map((node) => node.port)).size).toBe(3);
    for (const [i, key] of keys.entries()) {
      const node = cluster.nodeClient(masters[i]!);
      try {
        const entries = await node.xrange(key, '-', '+');
        expect(entries).toHaveLength(50);
        written.push(...entries.map(([id]) => id));
        const [pending] = (await node.xpending(key, 'billing')) as [number];
        expect(Number(pending)).toBe(0);
      } finally {
        node.disconnect();
      }
    }
    expect(written.sort()).toEqual([...ids].sort());
    const perStream = new Map<string, number>();
    for (const stream of handled.values()) perStream.set(stream, (perStream.get(stream) ?? 0) + 1);
    expect(Object.fromEntries(perStream)).toEqual(Object.fromEntries(keys.map((key) => [key, 50])));
  });
});
