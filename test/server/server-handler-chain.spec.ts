import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer } from '../fixtures/server-app.js';
import { pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const seen: Array<{ handler: string; group: string; n: number }> = [];

/** Three handlers of one pattern in one server: two groups, and two handlers sharing "billing". */
@Controller()
class ChainController {
  @EventPattern<string>('chained')
  billing(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    seen.push({ handler: 'billing', group: ctx.getGroup(), n: data.n });
  }

  @EventPattern<string>('chained', { group: 'audit' })
  audit(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    seen.push({ handler: 'audit', group: ctx.getGroup(), n: data.n });
  }

  @EventPattern<string>('chained')
  metrics(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    seen.push({ handler: 'metrics', group: ctx.getGroup(), n: data.n });
  }
}

@Controller()
class DisagreeingController {
  @EventPattern<string>('disagree')
  plain(): void {}

  @EventPattern<string>('disagree', { raw: true })
  raw(): void {}
}

describe('RedisStreamsServer: handlers of one pattern in one server', () => {
  const redis = useRedisServer();

  it('each group named in extras consumes every entry; handlers sharing a group both run once per entry', async () => {
    const { app } = await startServer({ connection: redis.server.url, group: 'billing', blockMs: 200 }, [ChainController]);
    try {
      for (let n = 0; n < 10; n++) await xaddEvent(redis.client, 'chained', 'chained', { n });
      await waitFor(() => seen.length === 30, 'three handlers × 10 entries');
      const groups = ((await redis.client.xinfo('GROUPS', 'chained')) as unknown[][]).map((g) => String(g[1])).sort();
      expect(groups).toEqual(['audit', 'billing']);
      for (const handler of ['billing', 'audit', 'metrics']) {
        const mine = seen.filter((s) => s.handler === handler);
        expect(mine.map((s) => s.n).sort((a, b) => a - b)).toEqual([...Array(10).keys()]);
        expect(new Set(mine.map((s) => s.group))).toEqual(new Set([handler === 'audit' ? 'audit' : 'billing']));
      }
      await waitFor(async () => (await pendingCount(redis.client, 'chained', 'billing')) === 0, 'billing acked');
      await waitFor(async () => (await pendingCount(redis.client, 'chained', 'audit')) === 0, 'audit acked');
    } finally {
      await app.close();
    }
  });

  it('handlers of one pattern and group that disagree on raw mode are an option error naming extras', async () => {
    await expect(startServer({ connection: redis.server.url, group: 'g' }, [DisagreeingController])).rejects.toThrow(RedisStreamsOptionError);
    await expect(startServer({ connection: redis.server.url, group: 'g' }, [DisagreeingController])).rejects.toThrow(/"extras"/);
  });
});
