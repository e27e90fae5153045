import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { SharedRateLimit } from '../../src/flow/shared-rate-limit.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { HoldingProxy } from '../helpers/holding-proxy.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const MAX = 10;
const PER_MS = 1_000;
const STREAM = 'gated';
/** The name of the limited handler's reader connection (it reads alone: server-reader:<group>). */
const READER = 'nestjs-redis-streams:server-reader:g';
/** The worker's command connection: its start-token asks, acks and retry releases go over it. */
const COMMANDS = 'nestjs-redis-streams:server';
/**
 * Starts are stamped in the handler, before any await, in this process: a start is later than its
 * tokens by the read's round trips (this much at most) and by however long this process' event loop
 * stalled meanwhile (a cold first delivery, GC, a loaded host: 124 ms once), which is measured.
 */
const STAMP_SLACK_MS = 100;
/** This process' event-loop stalls during one test (reset before each). */
const stalls = monitorEventLoopDelay({ resolution: 10 });

interface Start {
  n: number;
  deliveryCount: number;
  at: number;
}
const starts: Start[] = [];
let openGate: () => void = () => undefined;
let gate: Promise<void> = Promise.resolve();
function closeGate(): void {
  gate = new Promise((resolve) => (openGate = resolve));
}

@Controller()
class GatedController {
  /** Records its start, then waits for the test to open the gate (open: returns at once). */
  @EventPattern<string>(STREAM, { rateLimit: { max: MAX, per: PER_MS } })
  async onGated(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    starts.push({ n: data.n, deliveryCount: ctx.getDeliveryCount(), at: Date.now() });
    await gate;
  }
}

/** A stream whose bucket refills one token a minute: what a test takes from it stays taken. */
const SLOW_STREAM = 'slow';
const SLOW_PER_MS = 600_000;

@Controller()
class SlowRefillController {
  @EventPattern<string>(SLOW_STREAM, { rateLimit: { max: MAX, per: SLOW_PER_MS } })
  async onSlow(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    starts.push({ n: data.n, deliveryCount: ctx.getDeliveryCount(), at: Date.now() });
    await gate;
  }
}

/**
 * The most starts over the documented bound (max + max × t / per) in any stretch t between two
 * starts, t widened by how late a start may be stamped (`slackMs`).
 */
function worstExcess(slackMs: number): { excess: number; count: number; stretchMs: number } {
  const times = starts.map((start) => start.at).sort((a, b) => a - b);
  let worst = { excess: Number.NEGATIVE_INFINITY, count: 0, stretchMs: 0 };
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const stretchMs = (times[j] as number) - (times[i] as number);
      const excess = j - i + 1 - (MAX + Math.floor((MAX * (stretchMs + slackMs)) / PER_MS));
      if (excess > worst.excess) worst = { excess, count: j - i + 1, stretchMs };
    }
  }
  return worst;
}

/**
 * The bound of extras.rateLimit (at most max + max × t / per entries start in any stretch t) when
 * the limited reader's connection fails while the command connection (the grants) stays up, and
 * when entries start later than their tokens were taken. One worker, so every token is its own.
 */
describe('extras.rateLimit keeps its bound when the reader\'s connection fails and when starts would come late', () => {
  const redis = useRedisServer();
  let proxy: HoldingProxy;
  const running: RunningServer[] = [];
  const start = async (options: Partial<RedisStreamsServerOptions>, controller: new () => object = GatedController): Promise<void> => {
    running.push(
      await startServer(
        { connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 1_000, recovery: { minIdleTime: 60_000 }, ...options },
        [controller],
      ),
    );
  };
  const publish = async (entries: number, stream = STREAM): Promise<void> => {
    for (let n = 0; n < entries; n++) await xaddEvent(redis.client, stream, stream, { n });
  };
  /** Every entry started, once, none lost, all acked, and the starts within the bound. */
  const expectAllStartedWithinTheBound = async (entries: number, deliveryCount: number): Promise<void> => {
    await waitFor(() => starts.length >= entries, `${entries} started`, { timeout: 20_000 });
    await waitFor(async () => (await pendingCount(redis.client, STREAM, 'g')) === 0, 'every entry acked');
    expect(starts.map((s) => s.n).sort((a, b) => a - b)).toEqual(Array.from({ length: entries }, (_, n) => n));
    expect(starts.every((s) => s.deliveryCount === deliveryCount)).toBe(true);
    const slackMs = STAMP_SLACK_MS + Math.ceil(stalls.max / 1e6);
    const worst = worstExcess(slackMs);
    expect(worst.excess, `${worst.count} starts within ${worst.stretchMs} ms (starts ${slackMs} ms late allowed)`).toBeLessThanOrEqual(0);
  };

  beforeAll(async () => {
    proxy = await HoldingProxy.start(redis.server.port);
    stalls.enable();
  });
  afterAll(async () => {
    stalls.disable();
    await proxy.close();
  });
  beforeEach(() => stalls.reset());
  afterEach(async () => {
    vi.restoreAllMocks();
    openGate();
    proxy.release();
    for (const r of running.splice(0)) await r.app.close();
    starts.length = 0;
    await redis.client.flushall();
  });

  it('a read granted while the reader\'s connection is down is not queued for the reconnect: it would start its entries a hold later, on top of fresh tokens', async () => {
    await publish(30);
    closeGate();
    // One handler slot per token: the reader waits for slots, no command of it out.
    await start({ connection: proxy.url, concurrency: MAX, prefetch: MAX });
    await waitFor(() => starts.length === MAX, 'a full bucket started');
    // Handlers busy for one period: the bucket is full again for the next read.
    await sleep(PER_MS);
    proxy.dropAndHold(READER);
    await waitFor(() => proxy.held > 0, 'the reader reconnecting (held)');
    openGate();
    await waitFor(async () => (await pendingCount(redis.client, STREAM, 'g')) === 30 - 2 * MAX, 'the first entries acked, slots free');
    // Down for one period (as while Redis restarts): the bucket refills meanwhile.
    await sleep(PER_MS);
    proxy.release();
    await expectAllStartedWithinTheBound(30, 1);
  });

  it('a read unanswered when the reader\'s connection drops is not sent again after the reconnect (its tokens were taken before)', async () => {
    await publish(30);
    closeGate();
    await start({ connection: proxy.url, concurrency: MAX, prefetch: MAX });
    await waitFor(() => starts.length === MAX, 'a full bucket started');
    // Handlers busy for one period: the bucket is full again for the next read.
    await sleep(PER_MS);
    // The link stops carrying the reader's commands: its next read, granted, never reaches Redis.
    proxy.freeze(READER);
    openGate();
    await waitFor(() => proxy.heldText(READER).includes('XREADGROUP'), 'the next read granted and sent');
    proxy.dropAndHold(READER);
    await waitFor(() => proxy.held > 0, 'the reader reconnecting (held)');
    await sleep(PER_MS);
    proxy.release();
    await expectAllStartedWithinTheBound(30, 1);
  });

  it('a read unanswered when the reader\'s connection drops keeps the tokens it took: it may have run (they are not refunded)', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    await publish(30, SLOW_STREAM);
    closeGate();
    // The reader's back-off after the failed read is 1.5 to 3 s: the bucket is read before its next grant.
    await start({ connection: proxy.url, concurrency: 5, prefetch: 5, reconnectDelay: { initialMs: 3_000 } }, SlowRefillController);
    await waitFor(() => starts.length === 5, 'the first read of 5 started');
    // The next read, granted once the handlers return, never reaches Redis; then its connection drops.
    proxy.freeze(READER);
    openGate();
    await waitFor(() => proxy.heldText(READER).includes('XREADGROUP'), 'the next read granted and sent');
    proxy.dropAndHold(READER);
    await waitFor(() => proxy.held > 0, 'the reader reconnecting (held)');
    // Reconnected, the unanswered read fails (it is not sent again): what it took goes back or stays, then the warning.
    proxy.release();
    await waitFor(() => warn.mock.calls.some(([message]) => String(message).includes('read of group "g" failed')), 'the failed read handled');
    // The bucket: MAX less the started entries' tokens and those of the unanswered read (at least 1).
    const left = await new SharedRateLimit(redis.client, SLOW_STREAM, 'g', { max: MAX, perMs: SLOW_PER_MS, key: undefined }).take(MAX);
    expect(left.granted + starts.length, `${starts.length} started, ${left.granted} tokens left of ${MAX}`).toBeLessThan(MAX);
  });

  it('entries of a read queued behind busy handlers until their tokens are stale give them back and take fresh ones when they start', async () => {
    await publish(30);
    closeGate();
    await start({ concurrency: 2 });
    await waitFor(() => starts.length === 2, 'both handlers busy');
    // Busy for one period: the bucket refills meanwhile.
    await sleep(PER_MS);
    openGate();
    await expectAllStartedWithinTheBound(30, 1);
  });

  it('an entry that finds no fresh start token is held as a per-key limit holds one: with the retry consumer, no delivery counted, its handler slot free; it starts once there are tokens', async () => {
    await publish(5);
    closeGate();
    await start({ concurrency: 1 });
    await waitFor(() => starts.length === 1, 'the first entry running, the other 4 queued behind it');
    // Busy for one period: the queued entries' tokens go stale. Then no token for a while (an API's 429).
    await sleep(PER_MS);
    await new SharedRateLimit(redis.client, STREAM, 'g', { max: MAX, perMs: PER_MS, key: undefined }).backOff(3_000);
    openGate();
    // Each in turn finds no token and leaves its handler slot to the next: all 4 wait in Redis, none started.
    await waitFor(async () => {
      const rows = await pendingRows(redis.client, STREAM, 'g');
      return rows.length === 4 && rows.every((row) => row.consumer === 'retry' && row.deliveries === 0);
    }, 'the 4 held with the retry consumer, uncounted');
    expect(starts.map((s) => s.n)).toEqual([0]);
    await expectAllStartedWithinTheBound(5, 1);
  });

  it('close() with an entry waiting for its fresh start token where recovery does not run: returns at once, the entry not started, handed back pending with the queued ones', async () => {
    await publish(5);
    closeGate();
    await start({ concurrency: 1, shutdownTimeout: 10_000, handoffConsumer: 'handoff', recovery: false });
    await waitFor(() => starts.length === 1, 'the first entry running, the other 4 queued behind it');
    // Busy for one period: the queued entries' tokens go stale. Then a minute without tokens (an API's 429).
    await sleep(PER_MS);
    await new SharedRateLimit(redis.client, STREAM, 'g', { max: MAX, perMs: PER_MS, key: undefined }).backOff(60_000);
    openGate();
    await waitFor(async () => (await pendingCount(redis.client, STREAM, 'g')) === 4, 'the first acked, the next waiting for a token');
    const closeStarted = Date.now();
    await (running.pop() as RunningServer).app.close();
    // Not shutdownTimeout (10 s), nor the minute until a token: nothing ran.
    expect(Date.now() - closeStarted).toBeLessThan(2_000);
    expect(starts.map((s) => s.n)).toEqual([0]);
    const rows = await pendingRows(redis.client, STREAM, 'g');
    expect(rows.map((row) => [row.consumer, row.deliveries])).toEqual(Array.from({ length: 4 }, () => ['handoff', 1]));
  });

  it('close() with an entry asking for its fresh start token where recovery runs: the entry not started, its token given back, it waits with the retry consumer uncounted; the queued ones handed off', async () => {
    await publish(5);
    const ids = (await redis.client.xrange(STREAM, '-', '+')).map(([id]) => id);
    closeGate();
    // The reader, out of entries, waits in XREAD BLOCK for the whole test: a read's grant of the
    // whole bucket, frozen with the ask below and sent before it, would leave the ask no token.
    await start({ connection: proxy.url, concurrency: 1, shutdownTimeout: 10_000, handoffConsumer: 'handoff', blockMs: 60_000 });
    await waitFor(() => starts.length === 1, 'the first entry running, the other 4 queued behind it');
    // Busy for one period: the queued entries' tokens go stale (given back), the bucket is full again.
    await sleep(PER_MS);
    // The command connection (the asks) stops carrying commands: the next entry's ask stays unanswered.
    proxy.freeze(COMMANDS);
    openGate();
    // Its ask: a take of 1 token (the reader's asks, for its next read, want more).
    const startTokenAsk = `${rateLimitKey(STREAM, 'g')}\r\n$4\r\ntake\r\n$2\r\n${MAX}\r\n$4\r\n${PER_MS}\r\n$1\r\n1\r\n`;
    await waitFor(() => proxy.heldText(COMMANDS).includes(startTokenAsk), 'the next entry asking for its start token');
    const worker = running.pop() as RunningServer;
    // Seen from here: the refund of the one token the ask is granted once close() began (the
    // reader, stopped, gives back its next read's tokens too: more than one).
    const monitor = await redis.client.monitor();
    let refunds = 0;
    let marked = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      const words = args.map(String);
      if (words.includes(rateLimitKey(STREAM, 'g')) && words.includes('refund') && words.at(-1) === '1') refunds++;
      if (words[0]?.toLowerCase() === 'echo' && words[1] === 'close-counted') marked = true;
    });
    try {
      // close() begins (no held entry starts any more), then the ask is answered: a token granted.
      const closing = worker.server.close();
      proxy.thaw(COMMANDS);
      await closing;
      await worker.app.close();
      await redis.client.echo('close-counted');
      await waitFor(() => marked, 'the monitor to reach the ECHO');
      expect(refunds).toBe(1);
    } finally {
      monitor.disconnect();
    }
    expect(starts.map((s) => s.n)).toEqual([0]);
    // Nothing lost: the first acked, the asking one with the retry consumer (no delivery counted), the rest handed off.
    const rows = await pendingRows(redis.client, STREAM, 'g');
    expect(rows.map((row) => [row.id, row.consumer, row.deliveries])).toEqual([
      [ids[1], 'retry', 0],
      ...ids.slice(2).map((id) => [id, 'handoff', 1]),
    ]);
  });

  it('the start-up re-read of its own pending entries takes tokens: a restarted worker starts them within the limit', async () => {
    await redis.client.xgroup('CREATE', STREAM, 'g', '$', 'MKSTREAM');
    await publish(30);
    // Read by w1 before it was killed: pending for w1, re-read when it starts again.
    await redis.client.xreadgroup('GROUP', 'g', 'w1', 'COUNT', 30, 'STREAMS', STREAM, '>');
    await start({});
    await expectAllStartedWithinTheBound(30, 2);
  });
});
