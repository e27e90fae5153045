import { Controller, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { delayedWakeChannel } from '../../src/delayed/wake-channel.js';
import { partitionIndexOf, partitionStreamKeys } from '../../src/partitions/partition-keys.js';
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

  it('a hold due before the next round wakes the worker whichever master holds it (PUBLISH reaches every node’s subscribers)', async () => {
    // The first test's worker promotes every 50 ms: closed, so only this one, promoting every 10 s at the latest, is left.
    for (const item of opened.splice(0).reverse()) await item.close();
    handled.clear();
    const { cluster } = harness;
    const connection = { cluster: { nodes: cluster.urls } };
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController] }).compile();
    const app: INestMicroservice = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({ connection, group: 'billing', consumer: 'c1', blockMs: 100, delayed: { interval: 10_000 } }),
      logger: false,
    });
    opened.push(app);
    await app.listen();
    const producer = new RedisStreamsClient({ connection, partitions: { orders: PARTITIONS } });
    opened.push(producer);
    const keys = [...partitionStreamKeys('orders', PARTITIONS), '{eu}:orders'];
    /** A partition key that lands in partition `index`. */
    const keyFor = (index: number) => Array.from({ length: 1_000 }, (_, k) => `p${k}`).find((key) => partitionIndexOf(key, PARTITIONS) === index) as string;
    // One subscriber connection, on one node, for every stream's channel.
    const subscribers = async (stream: string) => {
      let count = 0;
      for (const master of await cluster.masters()) {
        const node = cluster.nodeClient(master);
        try {
          const [, n] = (await node.call('PUBSUB', 'NUMSUB', delayedWakeChannel(stream))) as [string, number];
          count += Number(n);
        } finally {
          node.disconnect();
        }
      }
      return count;
    };
    await waitFor(async () => (await Promise.all(keys.map(subscribers))).every((n) => n === 1), 'the worker subscribed to every wake-up channel');
    // A burst on every stream (their masters differ); after it the worker's next round is 10 s away
    // (the first test's hour-long holds are the earliest left), so the second must be woken for.
    for (const base of [1_000, 2_000]) {
      await Promise.all(
        keys.map((stream, i) =>
          lastValueFrom(producer.emit(stream === '{eu}:orders' ? stream : 'orders', new RedisStreamsRecord({ n: base + i }, { delay: 200, partitionKey: stream === '{eu}:orders' ? undefined : keyFor(i) }))),
        ),
      );
      await waitFor(() => keys.every((_, i) => handled.has(base + i)), `the burst from ${base} handled before the interval`, { timeout: 3_000, interval: 5 });
    }
    // Each in its own stream, once.
    expect(new Set([...handled].filter(([n]) => n >= 2_000).map(([, { stream }]) => stream))).toEqual(new Set(keys));
    expect([...handled.values()].every(({ times }) => times === 1)).toBe(true);
  }, 120_000);
});
