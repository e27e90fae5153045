import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

interface Run {
  id: string;
  deliveryCount: number;
  consumer: string;
  /** Redis' clock at the start of the handler. */
  at: number;
}
const runs: Run[] = [];
const thrown: unknown[] = [];
let redisTime: () => Promise<number> = () => Promise.resolve(0);

@Controller()
class NackController {
  @EventPattern<string>('later', { ackMode: 'manual' })
  async onLater(@Payload() data: { nacks: number; delay: number | string }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    runs.push({ id: ctx.getId(), deliveryCount: ctx.getDeliveryCount(), consumer: ctx.getConsumer(), at: await redisTime() });
    if (ctx.getDeliveryCount() <= data.nacks) {
      try {
        ctx.nack({ delay: data.delay });
      } catch (error) {
        thrown.push(error);
      }
    } else await ctx.ack();
  }

  @EventPattern<string>('alone', { ackMode: 'manual', recovery: false })
  onAlone(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    runs.push({ id: ctx.getId(), deliveryCount: ctx.getDeliveryCount(), consumer: ctx.getConsumer(), at: 0 });
    ctx.nack({ delay: 100 });
  }
}

describe('ctx.nack({ delay }): the entry comes back after the delay, count kept, without waiting for minIdleTime', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];
  redisTime = async () => {
    const [seconds, micros] = (await redis.client.time()) as [number | string, number | string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  // No retry policy and a long minIdleTime: only the nack's delay can bring an entry back within the test's waits.
  // Each test on its own streams (streamPrefix = the consumer name): no entry of one reaches another.
  const start = (consumer: string, extra: object = {}) =>
    startServer({ connection: redis.server.url, group: 'g', consumer, streamPrefix: `${consumer}:`, blockMs: 100, recovery: { minIdleTime: 120_000, ...extra } }, [NackController]);

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    runs.length = 0;
    thrown.length = 0;
  });

  it('waits with the retry consumer for the delay, then runs again with delivery count 2', async () => {
    running.push(await start('w1'));
    const id = (await xaddEvent(redis.client, 'w1:later', 'later', { nacks: 1, delay: 800 })) as string;
    await waitFor(async () => (await pendingRows(redis.client, 'w1:later', 'g'))[0]?.consumer === 'retry', 'the nacked entry with the retry consumer');
    await waitFor(() => runs.length === 2, 'the second delivery', { timeout: 15_000 });
    await waitFor(async () => (await pendingRows(redis.client, 'w1:later', 'g')).length === 0, 'the ack');
    const [first, second] = runs;
    expect([first?.id, first?.deliveryCount, second?.id, second?.deliveryCount, second?.consumer]).toEqual([id, 1, id, 2, 'w1']);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(800);
    expect(thrown).toEqual([]);
  });

  it('an ISO-8601 delay, nacked twice: three deliveries, each after its wait', async () => {
    running.push(await start('w2'));
    await xaddEvent(redis.client, 'w2:later', 'later', { nacks: 2, delay: 'PT0.3S' });
    await waitFor(() => runs.length === 3, 'the third delivery', { timeout: 15_000 });
    expect(runs.map((run) => run.deliveryCount)).toEqual([1, 2, 3]);
    expect((runs[1]?.at ?? 0) - (runs[0]?.at ?? 0)).toBeGreaterThanOrEqual(300);
    expect((runs[2]?.at ?? 0) - (runs[1]?.at ?? 0)).toBeGreaterThanOrEqual(300);
  });

  it('at maxDeliveries the nacked entry is dead-lettered, not delayed again', async () => {
    running.push(await start('w3', { maxDeliveries: 2 }));
    const id = (await xaddEvent(redis.client, 'w3:later', 'later', { nacks: 5, delay: 200 })) as string;
    await waitFor(async () => (await redis.client.xlen('{w3:later}:dead')) === 1, 'the dead letter', { timeout: 15_000 });
    expect(runs.map((run) => run.deliveryCount)).toEqual([1, 2]);
    const [[, fields]] = (await redis.client.xrange('{w3:later}:dead', '-', '+')) as [string, string[]][];
    expect(fields).toContain(id);
    expect(fields.join(' ')).toContain('nacked with a delay of 200 ms');
  });

  it('a bad delay throws RedisStreamsOptionError naming delay, and the entry stays unsettled for the handler', async () => {
    running.push(await start('w4'));
    await xaddEvent(redis.client, 'w4:later', 'later', { nacks: 1, delay: 'soon' });
    await waitFor(() => thrown.length === 1, 'the nack error');
    expect(thrown[0]).toBeInstanceOf(RedisStreamsOptionError);
    expect((thrown[0] as RedisStreamsOptionError).option).toBe('delay');
    expect((await pendingRows(redis.client, 'w4:later', 'g'))[0]?.consumer).toBe('w4');
  });

  it('a handler with recovery: false: nothing would take it back, so it stays pending with its consumer (a plain nack)', async () => {
    const worker = await start('w5');
    running.push(worker);
    await xaddEvent(redis.client, 'w5:alone', 'alone', {});
    await waitFor(() => runs.length === 1, 'the delivery');
    // A release would have gone out on the command connection right after the nack: a PING there answers after it.
    await worker.server.unwrap().commands.ping();
    expect((await pendingRows(redis.client, 'w5:alone', 'g')).map((row) => row.consumer)).toEqual(['w5']);
  });

  it('a server with recovery: false: no tick would take it back either, so it is a plain nack there too', async () => {
    const worker = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w6', streamPrefix: 'w6:', blockMs: 100, recovery: false }, [NackController]);
    running.push(worker);
    await xaddEvent(redis.client, 'w6:later', 'later', { nacks: 1, delay: 50 });
    await waitFor(() => runs.length === 1, 'the delivery');
    await worker.server.unwrap().commands.ping();
    expect((await pendingRows(redis.client, 'w6:later', 'g')).map((row) => row.consumer)).toEqual(['w6']);
    expect(runs).toHaveLength(1);
  });
});
