import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { pausedGroupsOf, pauseGroup } from '../../src/flow/pause-state.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const handled: Array<{ stream: string; n: number; at: number }> = [];
let releaseSlow: (() => void) | undefined;
/** Lets the slow handler running now finish. */
function finishSlow(): void {
  const release = releaseSlow;
  releaseSlow = undefined;
  release?.();
}

@Controller()
class PausableController {
  @EventPattern<string>('orders')
  onOrder(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), n: data.n, at: Date.now() });
  }

  @EventPattern<string>('audit')
  onAudit(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), n: data.n, at: Date.now() });
  }

  @EventPattern<string>('slow')
  async onSlow(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    await new Promise<void>((resolve) => (releaseSlow = resolve));
    handled.push({ stream: ctx.getStream(), n: data.n, at: Date.now() });
  }

  @EventPattern<string>('laned', { priorities: ['high', 'low'] })
  onLaned(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), n: data.n, at: Date.now() });
  }

  @EventPattern<string>('parted', { partitions: 2 })
  onParted(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), n: data.n, at: Date.now() });
  }
}

describe('pause / resume a stream\'s group for every worker (state in Redis)', () => {
  const redis = useRedisServer();
  const servers: RunningServer[] = [];
  // A paused reader polls every blockMs / 2; the waits that show nothing was read are a blockMs and a bit.
  const BLOCK_MS = 500;
  const start = (consumer: string) =>
    startServer({ connection: redis.server.url, group: 'g', consumer, blockMs: BLOCK_MS, recovery: { minIdleTime: 60_000 } }, [PausableController]);

  afterEach(async () => {
    finishSlow();
    for (const server of servers.splice(0)) await server.app.close();
    handled.length = 0;
    await redis.client.flushall();
  });

  it('a pause stops every worker reading that stream within one poll; other streams go on; resume brings every entry', async () => {
    const w1 = await start('p1');
    servers.push(w1, await start('p2'));
    await xaddEvent(redis.client, 'orders', 'orders', { n: 0 });
    await waitFor(() => handled.length === 1, 'the first order');

    expect(await w1.server.pause('orders')).toBe(true);
    expect(await w1.server.pause('orders')).toBe(false);
    expect(await w1.server.isPaused('orders')).toBe(true);
    // Every worker sees it within one poll (half blockMs), and reads without that stream from then on.
    const seePause = (server: RunningServer) => server.server.liveness().streams.some((s) => s.stream === 'orders' && s.paused === true);
    await waitFor(() => servers.every(seePause), 'both workers seeing the pause', { timeout: 3 * BLOCK_MS });
    for (let n = 1; n <= 5; n++) await xaddEvent(redis.client, 'orders', 'orders', { n });
    await xaddEvent(redis.client, 'audit', 'audit', { n: 100 });
    await waitFor(() => handled.some((h) => h.stream === 'audit'), 'the other stream, not paused');
    await sleep(BLOCK_MS + 200);
    expect(handled.filter((h) => h.stream === 'orders').map((h) => h.n)).toEqual([0]);
    // Not read at all: nothing pending, nothing delivered.
    expect(await pendingCount(redis.client, 'orders', 'g')).toBe(0);

    const resumedAt = Date.now();
    expect(await w1.server.resume('orders')).toBe(true);
    await waitFor(() => handled.filter((h) => h.stream === 'orders').length === 6, 'the five orders after resume');
    expect(Math.min(...handled.filter((h) => h.n >= 1 && h.n <= 5).map((h) => h.at))).toBeGreaterThanOrEqual(resumedAt);
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'g')) === 0, 'all acked');
  });

  it('the pause outlasts a restart: a worker started on a paused group reads nothing of it', async () => {
    const w = await start('p3');
    for (const pattern of ['orders', 'audit', 'slow', 'parted', 'laned']) await w.server.pause(pattern);
    await w.app.close();
    for (let n = 1; n <= 3; n++) await xaddEvent(redis.client, 'orders', 'orders', { n });
    const again = await start('p3');
    servers.push(again);
    await sleep(BLOCK_MS + 200);
    expect(handled).toEqual([]);
    // Every stream of its readers (the group's, the lanes') is paused: they wait on purpose, health checks must not call them stuck.
    expect(again.server.liveness().readers.map((reader) => reader.held)).toEqual(['paused', 'paused']);
    expect(await pendingCount(redis.client, 'orders', 'g')).toBe(0);
    expect([...(await pausedGroupsOf(redis.client, 'orders')).keys()]).toEqual(['g']);
    await again.server.resume('orders');
    await waitFor(() => handled.length === 3, 'the three orders');
  });

  it('a running handler finishes after the pause and is acked: nothing lost', async () => {
    const w = await start('p4');
    servers.push(w);
    await xaddEvent(redis.client, 'slow', 'slow', { n: 1 });
    await waitFor(() => releaseSlow !== undefined, 'the slow handler running');
    await w.server.pause('slow');
    await sleep(BLOCK_MS / 2 + 100);
    await xaddEvent(redis.client, 'slow', 'slow', { n: 2 });
    finishSlow();
    await waitFor(() => handled.length === 1, 'the running handler done');
    await waitFor(async () => (await pendingCount(redis.client, 'slow', 'g')) === 0, 'its ack');
    await sleep(BLOCK_MS / 2);
    expect(handled.map((h) => h.n)).toEqual([1]);
    await w.server.resume('slow');
    await waitFor(() => releaseSlow !== undefined, 'the second entry after resume');
    finishSlow();
    await waitFor(() => handled.length === 2, 'both handled');
  });

  it('one pause covers every partition of a partitioned pattern', async () => {
    const w = await start('p5');
    servers.push(w);
    await w.server.pause('parted');
    await sleep(BLOCK_MS / 2 + 100);
    for (let n = 0; n < 2; n++) await xaddEvent(redis.client, `parted:p${n}`, 'parted', { n });
    await sleep(BLOCK_MS + 200);
    expect(handled).toEqual([]);
    await w.server.resume('parted');
    await waitFor(() => handled.length === 2, 'both partitions');
  });

  it('one pause covers every priority lane of a pattern', async () => {
    const w = await start('p8');
    servers.push(w);
    await w.server.pause('laned');
    for (const lane of ['high', 'low']) await xaddEvent(redis.client, `laned:${lane}`, 'laned', { n: lane === 'high' ? 1 : 2 });
    await sleep(BLOCK_MS + 200);
    expect(handled).toEqual([]);
    await w.server.resume('laned');
    await waitFor(() => handled.length === 2, 'both lanes after resume');
  });

  it.each([
    ['recovery takes no claims for a paused group (a dead consumer\'s entry stays where it is)', 'ghost'],
    ['a worker restarted on a paused group does not re-read its own pending entries of it', 'p9'],
  ])('%s; after the resume recovery brings the entry', async (_case, owner) => {
    await redis.client.xgroup('CREATE', 'orders', 'g', '$', 'MKSTREAM');
    await xaddEvent(redis.client, 'orders', 'orders', { n: 7 });
    // `owner` read it and died before the ack: the dead consumer, or the worker's earlier life.
    await redis.client.xreadgroup('GROUP', 'g', owner, 'COUNT', 1, 'STREAMS', 'orders', '>');
    // Paused before the worker starts: not even its first read or recovery tick may take it.
    await pauseGroup(redis.client, 'orders', 'g');
    const w = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'p9', blockMs: BLOCK_MS, recovery: { minIdleTime: 200, interval: 100 } },
      [PausableController],
    );
    servers.push(w);
    await sleep(1_000);
    expect(handled).toEqual([]);
    expect((await pendingRows(redis.client, 'orders', 'g')).map((row) => row.consumer)).toEqual([owner]);
    await w.server.resume('orders');
    await waitFor(() => handled.length === 1, 'the entry after the resume');
    await waitFor(async () => (await pendingCount(redis.client, 'orders', 'g')) === 0, 'acked');
  });

  it('pause() with a bad pattern names it', async () => {
    const w = await start('p6');
    servers.push(w);
    await expect(w.server.pause('')).rejects.toThrow(/pattern/);
  });
});
