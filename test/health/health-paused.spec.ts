import { Controller, type INestMicroservice } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { pauseGroup, resumeGroup } from '../../src/flow/pause-state.js';
import { RedisStreamsHealthIndicator } from '../../src/health/index.js';
import { partitionStreamKey } from '../../src/partitions/partition-keys.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const BLOCK_MS = 100;
const READ_GRACE_MS = 200;
const handled: number[] = [];

@Controller()
class OrdersController {
  @EventPattern<string>('paused-orders', { partitions: 2 })
  onOrder(@Payload() data: { n: number }): void {
    handled.push(data.n);
  }
}

describe('health of a server whose group is paused (real redis-server)', () => {
  const redis = useRedisServer();
  const indicator = new RedisStreamsHealthIndicator(new HealthIndicatorService());
  let app: INestMicroservice | undefined;

  afterEach(async () => {
    await app?.close();
    app = undefined;
    handled.length = 0;
  });

  async function start(): Promise<RedisStreamsServer> {
    const moduleRef = await Test.createTestingModule({ controllers: [OrdersController] }).compile();
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'billing', consumer: 'c1', blockMs: BLOCK_MS, recovery: false });
    app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    await app.listen();
    return server;
  }

  it('stays up while paused longer than blockMs + readGraceMs, lists the pause on the partitioned stream, and reads again on resume', async () => {
    const server = await start();
    const options = { server, readGraceMs: READ_GRACE_MS, timeoutMs: 2_000 };
    await pauseGroup(redis.client, 'paused-orders', 'billing');
    await waitFor(() => server.liveness().readers.every((reader) => reader.held === 'paused'), 'the worker to see the pause', { timeout: 10_000 });
    // Longer without a read than a live reader may go: a reader that was not paused would be stuck.
    await waitFor(
      () => {
        const liveness = server.liveness();
        return liveness.readers.every((reader) => liveness.at - (reader.lastReadAt ?? reader.since) > BLOCK_MS + READ_GRACE_MS);
      },
      'the paused reader to go quiet past blockMs + readGraceMs',
      { timeout: 10_000 },
    );

    const alive = await indicator.isAlive('streams', options);
    const ready = await indicator.isHealthy('streams', options);
    for (const result of [alive, ready]) {
      expect(result.streams).toMatchObject({ status: 'up', servers: [{ problems: [], paused: [{ stream: 'paused-orders', group: 'billing' }] }] });
    }

    await redis.client.xadd(partitionStreamKey('paused-orders', 0), '*', 'pattern', 'paused-orders', 'data', JSON.stringify({ n: 1 }));
    await resumeGroup(redis.client, 'paused-orders', 'billing');
    await waitFor(() => handled.includes(1), 'the entry added while paused to be handled after resume', { timeout: 10_000 });
    expect((await indicator.isAlive('streams', options)).streams).toMatchObject({ status: 'up', servers: [{ problems: [], paused: [] }] });
  }, 30_000);
});
