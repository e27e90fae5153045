import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const handled: Array<{ id: string; deliveryCount: number }> = [];

@Controller()
class QuickController {
  // Server-wide minIdleTime stays the default 30 s; this stream is recovered after 200 ms.
  @EventPattern<string>('quick', { minIdleTime: 200 })
  onQuick(_data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ id: ctx.getId(), deliveryCount: ctx.getDeliveryCount() });
  }
}

/** The recovery tick interval follows the smallest minIdleTime in use, a handler's extras included. */
describe('recovery interval (real redis-server)', () => {
  const redis = useRedisServer();
  const recovery = new RedisStreamsRecovery();
  const running: RunningServer[] = [];
  afterEach(async () => {
    for (const { app } of running.splice(0)) await app.close();
    handled.length = 0;
  });

  async function worker(consumer: string, extra: Partial<RedisStreamsServerOptions> = {}): Promise<void> {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer, blockMs: 100, ...extra } as RedisStreamsServerOptions, [QuickController]));
  }

  it('a handler with extras.minIdleTime 200 ms gets ticks every 50 ms, and its dead consumer\'s entry back within seconds (the server-wide default would tick every 7.5 s)', async () => {
    await redis.client.del('quick');
    await redis.client.xgroup('CREATE', 'quick', 'g', '0', 'MKSTREAM');
    const id = (await redis.client.xadd('quick', '*', 'pattern', 'quick', 'data', '{}')) as string;
    await redis.client.xreadgroup('GROUP', 'g', 'dead', 'STREAMS', 'quick', '>'); // read, never acked
    await worker('alive');
    expect(recovery.stats({ consumer: 'alive' })[0]).toMatchObject({ interval: 50, streams: [{ stream: 'quick', minIdleTime: 200 }] });
    await waitFor(() => handled.length === 1, 'the dead consumer\'s entry recovered', { timeout: 5_000 });
    expect(handled).toEqual([{ id, deliveryCount: 2 }]);
  });

  it('an explicit recovery.interval is kept', async () => {
    await worker('explicit', { recovery: { interval: 1_000 } });
    expect(recovery.stats({ consumer: 'explicit' })[0]?.interval).toBe(1_000);
  });
});
