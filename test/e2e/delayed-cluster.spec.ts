import { Controller, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { partitionStreamKeys } from '../../src/partitions/partition-keys.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { waitFor } from '../helpers/wait.js';

const PARTITIONS = 6;
const handled = new Map<number, { stream: string; times: number }>();

@Controller()
class OrdersController {
  @EventPattern<string>('orders', { partitions: PARTITIONS })
  onOrder(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    const seen = handled.get(data.n);
    handled.set(data.n, { stream: ctx.getStream(), times: (seen?.times ?? 0) + 1 });
  }

  @EventPattern<string>('{eu}:orders')
  onTagged(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    const seen = handled.get(data.n);
    handled.set(data.n, { stream: ctx.getStream(), times: (seen?.times ?? 0) + 1 });
  }
}

describe('delayed emits on a 3-master Redis Cluster (partitioned and hash-tagged streams)', () => {
  const harness = useRedisCluster({ replicas: 0 });
  const opened: { close(): Promise<void> }[] = [];

  afterAll(async () => {
    for (const item of opened.reverse()) await item.close();
  });

  it('each hold lives on its stream’s master; every worker-promoted entry is handled once in its own partition', async () => {
    const { cluster } = harness;
    const connection = { cluster: { nodes: cluster.urls } };
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController] }).compile();
    const app: INestMicroservice = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({ connection, group: 'billing', consumer: 'c1', blockMs: 100, delayed: { interval: 50 } }),
      logger: false,
    });
    opened.push(app);
    await app.listen();
    const producer = new RedisStreamsClient({ connection, partitions: { orders: PARTITIONS } });
    opened.push(producer);

    // Held for an hour: where they live is checked node by node, without redirection.
    const keys = [...partitionStreamKeys('orders', PARTITIONS), '{eu}:orders'];
    for (const [i, stream] of keys.entries()) {
      const pattern = stream === '{eu}:orders' ? stream : 'orders';
      await lastValueFrom(producer.emit(pattern, new RedisStreamsRecord({ n: -1 - i }, { delay: 'PT1H', partitionKey: `k${i}` })));
    }
    let held = 0;
    for (const stream of keys) {
      const node = cluster.nodeClient(await cluster.masterOf(hashSlotOf(stream)));
      try {
        held += await node.zcard(delayedKeys(stream).schedule);
      } finally {
        node.disconnect();
      }
    }
    expect(held).toBe(keys.length);

    const count = 120;
    await Promise.all(
      Array.from({ length: count }, (_, n) =>
        lastValueFrom(producer.emit(n % 4 === 0 ? '{eu}:orders' : 'orders', new RedisStreamsRecord({ n }, { delay: 200, partitionKey: `key-${n}` }))),
      ),
    );
    await waitFor(() => [...handled.keys()].filter((n) => n >= 0).length === count, `${count} delayed orders handled`, { timeout: 30_000 });
    const wrong = [...handled].filter(([n, { times }]) => n >= 0 && times !== 1);
    expect(wrong).toEqual([]);
    // They went through every partition, not one.
    const streams = new Set([...handled].filter(([n]) => n >= 0).map(([, { stream }]) => stream));
    expect(streams.size).toBe(PARTITIONS + 1);
  }, 120_000);
});
