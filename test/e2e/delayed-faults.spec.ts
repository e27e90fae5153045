import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord, type RedisStreamsRecordOptions } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';
import { sleep, waitFor } from '../helpers/wait.js';

type Entry = [id: string, fields: string[]];

/** How many times each `n` (0..count-1) is in the stream, as the entries' JSON data carry it. */
async function copiesByN(redis: Redis, stream: string): Promise<Map<number, number>> {
  const copies = new Map<number, number>();
  for (const [, fields] of (await redis.xrange(stream, '-', '+')) as Entry[]) {
    const n = (JSON.parse(fields[fields.indexOf('data') + 1] as string) as { n: number }).n;
    copies.set(n, (copies.get(n) ?? 0) + 1);
  }
  return copies;
}

function expectEachOnce(copies: Map<number, number>, count: number): void {
  const wrong = [...Array(count).keys()].filter((n) => copies.get(n) !== 1).map((n) => `${n}×${copies.get(n) ?? 0}`);
  expect(wrong).toEqual([]);
  expect(copies.size).toBe(count);
}

async function holdAll(url: string, pattern: string, count: number, options: RedisStreamsRecordOptions): Promise<void> {
  const client = new RedisStreamsClient({ connection: url });
  try {
    await Promise.all(Array.from({ length: count }, (_, n) => lastValueFrom(client.emit(pattern, new RedisStreamsRecord({ n }, options)))));
  } finally {
    await client.close();
  }
}

async function heldCount(redis: Redis, stream: string): Promise<[number, number]> {
  const { schedule, bodies } = delayedKeys(stream);
  return [await redis.zcard(schedule), await redis.hlen(bodies)];
}

describe('delayed entries under faults: each delivered, none twice (counted by id)', () => {
  describe('worker processes', () => {
    const harness = useWorkerFleets();

    it('200 connections promoting 2000 due entries at once: each in the stream exactly once', async () => {
      const stream = 'race';
      const count = 2_000;
      await holdAll(harness.redis.url, stream, count, { deliverAt: 0, trim: false });
      const promoters = Array.from({ length: 200 }, () => harness.redis.client());
      try {
        await Promise.all(promoters.map((redis) => redis.ping()));
        const moved = await Promise.all(
          promoters.map(async (redis) => {
            let total = 0;
            for (;;) {
              const result = await promoteDue(redis, stream, 10);
              total += result.promoted.length;
              if (result.promoted.length === 0 && result.nextDueMs === undefined) return total;
            }
          }),
        );
        expect(moved.reduce((sum, n) => sum + n, 0)).toBe(count);
        // Several promoters really took part (else this raced nothing).
        expect(moved.filter((n) => n > 0).length).toBeGreaterThan(1);
      } finally {
        for (const redis of promoters) redis.disconnect();
      }
      expectEachOnce(await copiesByN(harness.client, stream), count);
      expect(await heldCount(harness.client, stream)).toEqual([0, 0]);
    }, 60_000);

    it('kill -9 of a worker while it promotes: another worker promotes the rest; each entry once, every one handled', async () => {
      const stream = 'promote-crash';
      const count = 5_000;
      await holdAll(harness.redis.url, stream, count, { deliverAt: 0, trim: false });
      const fleet = harness.fleet({
        url: harness.redis.url, stream, group: 'g', ledger: 'promote-crash-runs',
        // One entry per call: thousands of calls, so the kill lands in the middle of them.
        delayed: { batch: 1, maxPages: 1000, interval: 50 },
        recovery: { minIdleTime: 1_000 },
      });
      const first = await fleet.spawn();
      await waitFor(async () => (await harness.client.xlen(stream)) > 0, 'the first promotions', { timeout: 30_000, interval: 5 });
      await fleet.kill(first);
      const [left] = await heldCount(harness.client, stream);
      expect(left).toBeGreaterThan(0); // killed in the middle, not after the last promotion
      await fleet.spawn();
      await waitFor(async () => (await heldCount(harness.client, stream))[0] === 0, 'the second worker promotes the rest', { timeout: 60_000 });
      expectEachOnce(await copiesByN(harness.client, stream), count);
      expect(await heldCount(harness.client, stream)).toEqual([0, 0]);
      // Every entry handled (the killed worker's unacked ones after minIdleTime, by the second).
      const ids = new Set(((await harness.client.xrange(stream, '-', '+')) as Entry[]).map(([id]) => id));
      await waitFor(async () => {
        const handled = new Set((await harness.client.lrange('promote-crash-runs', 0, -1)).map((line) => line.split(':')[0]));
        return [...ids].every((id) => handled.has(id));
      }, 'every promoted entry handled', { timeout: 60_000, interval: 200 });
    }, 180_000);
  });

  describe('Redis paused and restarted (one in-process worker)', () => {
    const seen = new Map<number, number>();
    @Controller()
    class CountingController {
      @EventPattern<string>('paused')
      onPaused(@Payload() data: { n: number }): void {
        seen.set(data.n, (seen.get(data.n) ?? 0) + 1);
      }

      @EventPattern<string>('restarted')
      onRestarted(@Payload() data: { n: number }): void {
        seen.set(data.n, (seen.get(data.n) ?? 0) + 1);
      }
    }

    let redis: RedisServerProcess;
    let admin: Redis;
    const running: RunningServer[] = [];
    afterEach(async () => {
      for (const r of running.splice(0)) await r.app.close();
      seen.clear();
    });
    afterAll(async () => {
      admin?.disconnect();
      await redis?.stop();
    });

    it('SIGSTOP of Redis while entries come due, then SIGCONT: each promoted once, each handled once', async () => {
      redis = await RedisServerProcess.start({ appendOnly: true });
      admin = redis.client();
      const count = 500;
      running.push(await startServer({ connection: redis.url, group: 'g', consumer: 'w', delayed: { interval: 20, batch: 7 } }, [CountingController]));
      await holdAll(redis.url, 'paused', count, { delay: 300, trim: false });
      redis.pause();
      // Frozen while the entries come due: the worker's promotions time out or wait unanswered.
      await sleep(1_500);
      redis.resume();
      await waitFor(() => seen.size === count, 'every delayed entry handled', { timeout: 30_000 });
      expectEachOnce(await copiesByN(admin, 'paused'), count);
      expect([...seen.values()].every((times) => times === 1)).toBe(true);
      expect(await heldCount(admin, 'paused')).toEqual([0, 0]);
    }, 60_000);

    it('kill -9 of Redis (AOF) in the middle of the promotions, then a restart: held entries survive, each promoted once', async () => {
      const count = 3_000;
      running.push(await startServer({ connection: redis.url, group: 'g', consumer: 'w', delayed: { interval: 20, batch: 1 } }, [CountingController]));
      await holdAll(redis.url, 'restarted', count, { delay: 200, trim: false });
      await waitFor(async () => (await admin.xlen('restarted')) > 0, 'the first promotions', { interval: 2 });
      await redis.kill();
      await redis.restart();
      const [left] = await heldCount(admin, 'restarted');
      expect(left).toBeGreaterThan(0); // the kill came before the last promotion
      await waitFor(async () => (await heldCount(admin, 'restarted'))[0] === 0, 'the rest promoted after the restart', { timeout: 60_000 });
      expectEachOnce(await copiesByN(admin, 'restarted'), count);
      expect(await heldCount(admin, 'restarted')).toEqual([0, 0]);
    }, 90_000);
  });
});
