import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

interface Run {
  id: string;
  deliveryCount: number;
  /** Redis' clock at the start of the batch. */
  at: number;
}
const runs: Run[] = [];
const thrown: unknown[] = [];
let redisTime: () => Promise<number> = () => Promise.resolve(0);

@Controller()
class BatchNackController {
  /** Entries with `{ later: true }` are failed with a delay on their first delivery; the rest are acked. */
  @EventPattern<string>('later', { batch: { size: 10, waitMs: 100 } })
  async onLater(@Payload() payloads: Array<{ later?: boolean; delay?: number | string; throws?: boolean }>, @Ctx() ctx: RedisStreamsBatchContext): Promise<void> {
    const at = await redisTime();
    ctx.entries.forEach((entry, i) => {
      runs.push({ id: entry.id, deliveryCount: entry.deliveryCount, at });
      const payload = payloads[i] ?? {};
      if (!payload.later || entry.deliveryCount > 1) return;
      try {
        ctx.fail(i, new Error('not yet'), { delay: payload.delay ?? 600 });
      } catch (error) {
        thrown.push(error);
      }
    });
    if (payloads.some((payload) => payload.throws) && ctx.entries.every((entry) => entry.deliveryCount === 1)) throw new Error('the batch failed');
  }
}

describe('batch handlers: ctx.fail(i, error, { delay }) brings that entry back after the delay, count kept; the others are acked', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];
  redisTime = async () => {
    const [seconds, micros] = (await redis.client.time()) as [number | string, number | string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  // No retry policy and a long minIdleTime: only the delay can bring an entry back within the test's waits.
  const start = (consumer: string) =>
    startServer({ connection: redis.server.url, group: 'g', consumer, streamPrefix: `${consumer}:`, blockMs: 100, recovery: { minIdleTime: 120_000 } }, [BatchNackController]);

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    runs.length = 0;
    thrown.length = 0;
  });

  it('the delayed entry waits with the retry consumer, then comes back once with delivery count 2; the others are acked at once', async () => {
    running.push(await start('b1'));
    const ids: string[] = [];
    for (const payload of [{}, { later: true, delay: 600 }, {}]) ids.push((await xaddEvent(redis.client, 'b1:later', 'later', payload)) as string);
    await waitFor(async () => {
      const rows = await pendingRows(redis.client, 'b1:later', 'g');
      return rows.length === 1 && rows[0]?.consumer === 'retry';
    }, 'only the delayed entry pending, with the retry consumer');
    await waitFor(async () => runs.length === 4 && (await pendingRows(redis.client, 'b1:later', 'g')).length === 0, 'its second delivery, acked', { timeout: 15_000 });
    expect(runs.slice(0, 3).map((run) => [run.id, run.deliveryCount])).toEqual(ids.map((id) => [id, 1]));
    const again = runs[3] as Run;
    expect([again.id, again.deliveryCount]).toEqual([ids[1], 2]);
    expect(again.at - (runs[0] as Run).at).toBeGreaterThanOrEqual(600);
    expect(thrown).toEqual([]);
  });

  it('a handler that throws after the mark: every entry stays pending, and the marked one still comes back after its delay', async () => {
    running.push(await start('b2'));
    const delayed = (await xaddEvent(redis.client, 'b2:later', 'later', { later: true, delay: 'PT0.4S' })) as string;
    const other = (await xaddEvent(redis.client, 'b2:later', 'later', { throws: true })) as string;
    await waitFor(() => runs.length === 3, 'the delayed entry run again', { timeout: 15_000 });
    expect(runs.map((run) => [run.id, run.deliveryCount])).toEqual([[delayed, 1], [other, 1], [delayed, 2]]);
    // The other one stays with this consumer until minIdleTime (no retry policy): not back within the test.
    await waitFor(async () => (await pendingRows(redis.client, 'b2:later', 'g')).map((row) => row.id).join() === other, 'only the thrown one pending');
  });

  it('a bad delay throws RedisStreamsOptionError naming delay and leaves the entry unmarked (acked with the batch)', async () => {
    running.push(await start('b3'));
    await xaddEvent(redis.client, 'b3:later', 'later', { later: true, delay: 'soon' });
    await waitFor(() => thrown.length === 1, 'the fail error');
    expect(thrown[0]).toBeInstanceOf(RedisStreamsOptionError);
    expect((thrown[0] as RedisStreamsOptionError).option).toBe('delay');
    await waitFor(async () => (await pendingRows(redis.client, 'b3:later', 'g')).length === 0, 'the entry acked');
  });
});
