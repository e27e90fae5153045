import { Controller, type Type } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

interface Call {
  ids: string[];
  payloads: Array<{ n: number }>;
  deliveryCounts: number[];
  at: number;
}
const calls: Record<string, Call[]> = {};
let maxPendingSeen = 0;

function recordCall(stream: string, payloads: Array<{ n: number }>, ctx: RedisStreamsBatchContext): Call {
  const call = { ids: ctx.getIds(), payloads, deliveryCounts: ctx.entries.map((entry) => entry.deliveryCount), at: Date.now() };
  (calls[stream] ??= []).push(call);
  return call;
}

class BatchFailure extends Error {
  override name = 'BatchFailure';
}

@Controller()
class SizeController {
  @EventPattern<string>('sized', { batch: { size: 100, waitMs: 300 } })
  onSized(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): void {
    recordCall('sized', payloads, ctx);
  }

  @EventPattern<string>('waited', { batch: { size: 50, waitMs: 200 } })
  onWaited(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): void {
    recordCall('waited', payloads, ctx);
  }
}

@Controller()
class CountedController {
  @EventPattern<string>('counted', { batch: { size: 25, waitMs: 5 } })
  async onCounted(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): Promise<void> {
    recordCall('counted', payloads, ctx);
    await sleep(1 + (payloads.length % 3));
  }
}

@Controller()
class PartialController {
  @EventPattern<string>('partial', { batch: { size: 10, waitMs: 200 }, recovery: false })
  onPartial(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): void {
    recordCall('partial', payloads, ctx);
    // One by index, one by id.
    ctx.fail(2, new BatchFailure('entry 2 is bad'));
    ctx.fail(ctx.entries[7]!.id, new BatchFailure('entry 7 is bad'));
  }

  @EventPattern<string>('queued', { batch: { size: 10, waitMs: 200 }, recovery: false })
  onQueued(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): void {
    recordCall('queued', payloads, ctx);
    ctx.fail(2, new BatchFailure('entry 2 is bad'));
    ctx.fail(ctx.entries[7]!.id, new BatchFailure('entry 7 is bad'));
  }

  @EventPattern<string>('thrown', { batch: { size: 10, waitMs: 200 }, recovery: false })
  onThrown(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): void {
    recordCall('thrown', payloads, ctx);
    throw new BatchFailure('the whole batch failed');
  }
}

@Controller()
class PoisonController {
  @EventPattern<string>('poison', { batch: { size: 20, waitMs: 50 }, minIdleTime: 150, maxDeliveries: 2 })
  async onPoison(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): Promise<void> {
    recordCall('poison', payloads, ctx);
    throw new BatchFailure('bulk insert refused');
  }
}

@Controller()
class SlowController {
  @EventPattern<string>('slow', { batch: { size: 5, waitMs: 1 }, concurrency: 1 })
  async onSlow(@Payload() payloads: Array<{ n: number }>, @Ctx() ctx: RedisStreamsBatchContext): Promise<void> {
    recordCall('slow', payloads, ctx);
    await sleep(400);
  }
}

async function addEntries(client: Redis, stream: string, count: number): Promise<string[]> {
  const pipeline = client.pipeline();
  for (let n = 0; n < count; n++) pipeline.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n }));
  return ((await pipeline.exec()) ?? []).map(([error, id]) => {
    if (error) throw error;
    return id as string;
  });
}

/** The group at 0 (a server of an earlier test may have created it already, for its controller's other handlers). */
async function createGroup(client: Redis, stream: string): Promise<void> {
  await client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM').catch((error: Error) => {
    if (!error.message.includes('BUSYGROUP')) throw error;
  });
}

describe('batch handlers (extras.batch, real redis-server)', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    for (const key of Object.keys(calls)) delete calls[key];
    maxPendingSeen = 0;
  });

  async function start(controllers: Type[], extra: Record<string, unknown> = {}): Promise<RunningServer> {
    const started = await startServer({ connection: redis.server.url, group: 'g', consumer: 'batcher', blockMs: 100, ...extra }, controllers);
    running.push(started);
    return started;
  }

  it('a full batch of `size` when enough entries are there, in stream order; the rest after waitMs', async () => {
    await createGroup(redis.client, 'sized');
    const ids = await addEntries(redis.client, 'sized', 250);
    await start([SizeController]);
    await waitFor(() => (calls.sized ?? []).flatMap((call) => call.ids).length === 250, 'every entry handled');
    const sizes = calls.sized!.map((call) => call.ids.length);
    expect(sizes).toEqual([100, 100, 50]);
    expect(calls.sized!.flatMap((call) => call.ids)).toEqual(ids);
    expect(calls.sized!.flatMap((call) => call.payloads.map((payload) => payload.n))).toEqual(ids.map((_, n) => n));
    expect(calls.sized!.flatMap((call) => call.deliveryCounts).every((count) => count === 1)).toBe(true);
    await waitFor(async () => (await pendingRows(redis.client, 'sized', 'g')).length === 0, 'every entry acked');
  });

  it('fewer entries than `size`: one smaller batch, waitMs after they came', async () => {
    await start([SizeController]);
    const written = Date.now();
    const ids = await addEntries(redis.client, 'waited', 3);
    await waitFor(() => (calls.waited ?? []).length === 1, 'one batch');
    expect(calls.waited![0]!.ids).toEqual(ids);
    // The batch waited for more (the timer starts once the entries are read, after they were written).
    expect(calls.waited![0]!.at - written).toBeGreaterThanOrEqual(200 - 5);
    await waitFor(async () => (await pendingRows(redis.client, 'waited', 'g')).length === 0, 'acked');
  });

  it('counted ids: every id handled once, no batch larger than size, never more than prefetch pending', async () => {
    const prefetch = 60;
    await createGroup(redis.client, 'counted');
    const ids = await addEntries(redis.client, 'counted', 1_500);
    await start([CountedController], { prefetch, concurrency: 2 });
    const done = () => (calls.counted ?? []).flatMap((call) => call.ids).length >= ids.length;
    while (!done()) {
      const mine = (await pendingRows(redis.client, 'counted', 'g', 'batcher')).length;
      maxPendingSeen = Math.max(maxPendingSeen, mine);
      await sleep(3);
    }
    const handled = calls.counted!.flatMap((call) => call.ids);
    expect(handled).toHaveLength(ids.length);
    expect(new Set(handled)).toEqual(new Set(ids));
    expect(Math.max(...calls.counted!.map((call) => call.ids.length))).toBe(25);
    expect(maxPendingSeen).toBeLessThanOrEqual(prefetch);
    await waitFor(async () => (await pendingRows(redis.client, 'counted', 'g')).length === 0, 'all acked');
  });

  it('partial failure (ctx.fail by index and by id): exactly the marked entries stay pending, the others are acked', async () => {
    await createGroup(redis.client, 'partial');
    const ids = await addEntries(redis.client, 'partial', 10);
    await start([PartialController]);
    await waitFor(() => (calls.partial ?? []).length === 1, 'the batch ran');
    expect(calls.partial![0]!.ids).toEqual(ids);
    // Settled: the 8 good ones acked, the marked ones left.
    await waitFor(async () => (await pendingRows(redis.client, 'partial', 'g')).length === 2, 'the good entries acked');
    await sleep(100); // a late, wrong ack would show up now
    const pending = await pendingRows(redis.client, 'partial', 'g');
    expect(pending.map((row) => row.id)).toEqual([ids[2], ids[7]]);
    expect(pending.every((row) => row.consumer === 'batcher' && row.deliveries === 1)).toBe(true);
  });

  it('work-queue mode (XACKDEL, Redis 8.2+): a partial batch leaves exactly the marked entries, in the stream and pending', async (test) => {
    if (!(await capabilitiesOf(redis.client)).xackdel) test.skip();
    await createGroup(redis.client, 'queued');
    const ids = await addEntries(redis.client, 'queued', 10);
    await start([PartialController], { workQueue: true });
    await waitFor(() => (calls.queued ?? []).length === 1, 'the batch ran');
    await waitFor(async () => (await redis.client.xlen('queued')) === 2, 'the acked entries deleted');
    const left = (await redis.client.xrange('queued', '-', '+')).map(([id]) => id);
    expect(left).toEqual([ids[2], ids[7]]);
    expect((await pendingRows(redis.client, 'queued', 'g')).map((row) => row.id)).toEqual([ids[2], ids[7]]);
  });

  it('a handler that throws: every entry of the batch stays pending', async () => {
    await createGroup(redis.client, 'thrown');
    const ids = await addEntries(redis.client, 'thrown', 10);
    const { server } = await start([PartialController]);
    await waitFor(() => (calls.thrown ?? []).length === 1, 'the batch ran');
    // Its slots are freed (nothing is held here any more), and nothing was acked.
    await waitFor(() => server.liveness().prefetch.inFlight === 0, 'slots freed');
    expect((await pendingRows(redis.client, 'thrown', 'g')).map((row) => row.id)).toEqual(ids);
  });

  it('a batch that always throws: redelivered entries rejoin batches, each entry dead-lettered once after maxDeliveries, with the batch error', async () => {
    await createGroup(redis.client, 'poison');
    const ids = await addEntries(redis.client, 'poison', 30);
    await start([PoisonController], { recovery: { interval: 50 } });
    await waitFor(
      async () => (await redis.client.xlen('{poison}:dead')) === ids.length && (await pendingRows(redis.client, 'poison', 'g')).length === 0,
      'every entry dead-lettered, nothing pending',
      { timeout: 20_000 },
    );
    await sleep(300); // a stray extra dead letter would show up now
    const letters = ((await redis.client.xrange('{poison}:dead', '-', '+')) as Array<[string, string[]]>).map(([id, flat]) => parseDeadLetter(id, flat)!);
    expect(letters.map((letter) => letter.sourceId).sort()).toEqual([...ids].sort());
    for (const letter of letters) {
      expect(letter).toMatchObject({ sourceStream: 'poison', group: 'g', reason: 'max_deliveries', error: 'BatchFailure: bulk insert refused' });
      expect(letter.deliveryCount).toBeGreaterThanOrEqual(2);
    }
    // Redelivered (claimed) entries ran again in batches, with their delivery count.
    const runs = calls.poison!.flatMap((call) => call.ids.map((id, i) => ({ id, count: call.deliveryCounts[i]! })));
    for (const id of ids) expect(runs.filter((run) => run.id === id).map((run) => run.count).slice(0, 2)).toEqual([1, 2]);
    expect(calls.poison!.some((call) => call.ids.length > 1 && call.deliveryCounts.every((count) => count >= 2))).toBe(true);
  });

  it('close(): the running batch finishes and is acked, the unstarted entries are handed off', async () => {
    await createGroup(redis.client, 'slow');
    const ids = await addEntries(redis.client, 'slow', 12);
    const { app } = await start([SlowController]);
    await waitFor(() => (calls.slow ?? []).length === 1, 'the first batch started');
    await app.close();
    running.length = 0;
    const first = calls.slow![0]!.ids;
    expect(first).toEqual(ids.slice(0, 5));
    expect(calls.slow).toHaveLength(1);
    const pending = await pendingRows(redis.client, 'slow', 'g');
    expect(pending.map((row) => row.id)).toEqual(ids.slice(5));
    expect(pending.every((row) => row.consumer === 'handoff')).toBe(true);
  });
});
