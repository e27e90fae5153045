import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const MB = 1_000_000;
const seen = { big: [] as Array<{ id: string; length: number }>, bulk: 0, urgent: [] as Array<{ id: string; bulkSeen: number }> };

@Controller()
class BigController {
  @EventPattern<string>('big', { raw: true })
  async onEntry(@Payload() fields: Record<string, string>, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    await sleep(5);
    seen.big.push({ id: ctx.getId(), length: (fields.data as string).length });
  }
}

@Controller()
class NeighboursController {
  @EventPattern<string>('bulk')
  onBulk(): void {
    seen.bulk++;
  }

  @EventPattern<string>('urgent')
  onUrgent(@Ctx() ctx: RedisStreamsContext): void {
    seen.urgent.push({ id: ctx.getId(), bulkSeen: seen.bulk });
  }
}

async function addBig(redis: import('ioredis').Redis, stream: string, bytes: number): Promise<string> {
  return (await redis.xadd(stream, '*', 'pattern', stream, 'data', 'x'.repeat(bytes))) as string;
}

describe('RedisStreamsServer: flow control by bytes (maxPrefetchBytes)', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  beforeAll(ensureCompiled, 300_000);

  afterEach(async () => {
    await running?.app.close();
    running = undefined;
    seen.big = [];
    seen.bulk = 0;
    seen.urgent = [];
  });

  it('1 MB entries with a 4 MB cap: the bytes held never exceed the cap; every id handled once, nothing pending', async () => {
    const cap = 4 * MB;
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c', maxPrefetchBytes: cap, blockMs: 200 }, [BigController]);
    // The first entry gives the size: before it a read assumes 64 KiB entries (the documented first-read overshoot).
    const ids = [await addBig(redis.client, 'big', MB)];
    await waitFor(() => seen.big.length === 1, 'the first entry handled');
    // The rest at once (one MULTI), a backlog: one at a time, a quick worker could keep up and never hold two.
    const backlog = redis.client.multi();
    for (let i = 0; i < 29; i++) backlog.xadd('big', '*', 'pattern', 'big', 'data', 'x'.repeat(MB));
    for (const [error, id] of (await backlog.exec()) ?? []) {
      expect(error).toBeNull();
      ids.push(id as string);
    }
    expect(ids).toHaveLength(30);
    await waitFor(() => seen.big.length === ids.length, 'every big entry handled', { timeout: 30_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'big', 'g')) === 0, 'nothing pending');
    expect(seen.big.map((entry) => entry.id).sort()).toEqual([...ids].sort());
    expect(seen.big.every((entry) => entry.length === MB)).toBe(true);
    // Redis answered the last XACK before our XPENDING; the server frees the slots when it reads that answer.
    const server = running.server;
    await waitFor(() => server.recoveryHost().prefetchUsage().heldBytes === 0, 'every held byte released');
    const usage = server.recoveryHost().prefetchUsage();
    expect(usage.maxPrefetchBytes).toBe(cap);
    expect(usage.peakHeldBytes).toBeLessThanOrEqual(cap);
    // More than one entry at a time: the cap bounds the reads, it does not serialize them.
    expect(usage.peakHeldBytes).toBeGreaterThan(MB + 100);
  });

  async function runByteCapWorker(cap: number, count: number): Promise<{ handled: number; rssGrowthMb: number; peakHeldBytes: number }> {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', compiledPath('test/fixtures/byte-cap-worker.ts'), redis.server.url, String(cap), String(count)],
      { timeout: 120_000 },
    );
    return JSON.parse(stdout.trim()) as { handled: number; rssGrowthMb: number; peakHeldBytes: number };
  }

  // RSS after a full GC per entry (the fixture's): V8's slack for large strings, tens of MB that vary
  // run to run, would otherwise hide what the transport holds (docs/server.md "Sizing a worker").
  it('in a process of its own, a backlog of 1 MB entries under a 4 MB cap: RSS grows by the cap plus at most 24 MB', async () => {
    const result = await runByteCapWorker(4 * MB, 80);
    expect(result.handled).toBe(80);
    expect(result.peakHeldBytes).toBeLessThanOrEqual(4 * MB);
    expect(result.rssGrowthMb).toBeLessThan(4 + 24);
    expect(await pendingCount(redis.client, 'big', 'g')).toBe(0);
  }, 150_000);

  it('the same backlog under a 200 MB cap is read at once: RSS grows by more than the backlog (what the cap above prevents)', async () => {
    const result = await runByteCapWorker(200 * MB, 80);
    expect(result.handled).toBe(80);
    expect(result.peakHeldBytes).toBeGreaterThan(60 * MB);
    expect(result.rssGrowthMb).toBeGreaterThan(60);
    expect(await pendingCount(redis.client, 'big', 'g')).toBe(0);
  }, 150_000);

  it('a 5 MB entry with a 1 MB cap is handled alone, and the entries after it too', async () => {
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c', maxPrefetchBytes: MB, blockMs: 200 }, [BigController]);
    const ids = [await addBig(redis.client, 'big', 5 * MB)];
    await waitFor(() => seen.big.length === 1, 'the first 5 MB entry handled');
    for (let i = 0; i < 5; i++) ids.push(await addBig(redis.client, 'big', 1_000));
    ids.push(await addBig(redis.client, 'big', 5 * MB));
    await waitFor(() => seen.big.length === ids.length, 'every entry handled', { timeout: 30_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'big', 'g')) === 0, 'nothing pending');
    expect(seen.big.map((entry) => entry.id)).toEqual(ids);
    expect(seen.big.map((entry) => entry.length)).toEqual([5 * MB, 1_000, 1_000, 1_000, 1_000, 1_000, 5 * MB]);
    // Held alone: never a 5 MB entry and another one at once.
    const usage = running.server.recoveryHost().prefetchUsage();
    expect(usage.peakHeldBytes).toBeLessThan(5 * MB + 1_000);
  });

  it('a stream with a backlog does not starve another: urgent entries are handled while the backlog drains', async () => {
    const pipeline = redis.client.pipeline();
    for (let i = 0; i < 20_000; i++) pipeline.xadd('bulk', '*', 'pattern', 'bulk', 'data', '{"n":1}');
    await pipeline.exec();
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c', blockMs: 200 }, [NeighboursController]);
    await waitFor(() => seen.bulk >= 1_000, 'the backlog draining', { interval: 1 });
    const urgentIds: string[] = [];
    const bulkAtAdd = seen.bulk;
    for (let i = 0; i < 3; i++) urgentIds.push((await redis.client.xadd('urgent', '*', 'pattern', 'urgent', 'data', `{"i":${i}}`)) as string);
    await waitFor(() => seen.urgent.length === urgentIds.length, 'the urgent entries handled', { timeout: 20_000 });
    expect(seen.urgent.map((entry) => entry.id)).toEqual(urgentIds);
    // Every few reads take all streams: the urgent entries wait for a few reads of the backlog, not for all of it.
    const last = seen.urgent[seen.urgent.length - 1] as { bulkSeen: number };
    expect(last.bulkSeen - bulkAtAdd).toBeLessThan(5_000);
    await waitFor(() => seen.bulk === 20_000, 'the backlog drained', { timeout: 60_000 });
  });
});
