import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Cluster } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../src/client/redis-streams-client.js';
import { RedisStreamsServer } from '../src/server/redis-streams.server.js';
import { useRedisCluster } from './helpers/redis-cluster.js';

@Controller()
class EchoController {
  @MessagePattern('{ha}:echo')
  echo(@Payload() value: unknown) {
    return value;
  }
}

@Module({ controllers: [EchoController] })
class EchoModule {}

// One cluster for the whole file: starting one costs seconds.
const harness = useRedisCluster();

describe('RedisStreamsClient on a Cluster instance', () => {
  const closers: (() => unknown)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });
  const clusterClient = (lazyConnect: boolean): Cluster => {
    const cluster = harness.cluster.client({ lazyConnect });
    closers.push(() => cluster.disconnect());
    return cluster;
  };
  const streamsClient = (connection: Cluster): RedisStreamsClient => {
    const client = new RedisStreamsClient({ connection, commandTimeout: 5_000 });
    closers.push(() => client.close());
    return client;
  };

  it.each([
    ['connecting (new Cluster(nodes))', async () => clusterClient(false)],
    ['lazy ({ lazyConnect: true })', async () => clusterClient(true)],
    [
      'ready',
      async () => {
        const cluster = clusterClient(false);
        await new Promise((resolve) => cluster.once('ready', resolve));
        return cluster;
      },
    ],
  ])('emits issued at once on a %s Cluster all succeed', async (_, make) => {
    const cluster = await make();
    const client = streamsClient(cluster);
    const stream = `emits-${Math.random().toString(36).slice(2)}`;
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => lastValueFrom(client.emit(stream, { i }))));
    expect(ids.every((id) => typeof id === 'string')).toBe(true);
    const check = harness.cluster.client();
    try {
      expect(await check.xlen(stream)).toBe(6);
    } finally {
      check.disconnect();
    }
  });

  describe('send() on a connecting Cluster', () => {
    let app: INestMicroservice;
    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({ imports: [EchoModule] }).compile();
      app = moduleRef.createNestMicroservice({
        strategy: new RedisStreamsServer({ connection: harness.cluster.client(), group: 'echo', blockMs: 100, shutdownTimeout: 500 }),
      });
      await app.listen();
    });
    afterAll(async () => {
      await app?.close();
    });

    it('the first requests wait for the cluster and get their replies', async () => {
      const client = streamsClient(clusterClient(false));
      const replies = await Promise.all([1, 2, 3].map((n) => lastValueFrom(client.send('{ha}:echo', n))));
      expect(replies).toEqual([1, 2, 3]);
    });
  });
});
