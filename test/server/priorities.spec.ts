import { Controller, Logger, type INestMicroservice, type Type } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { checkLanesShareSlot, defaultPriorityOf, priorityLanesOption, priorityStreamKeys } from '../../src/priorities/priority-lanes.js';
import { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { STARVATION_LIMIT } from '../../src/server/priority-read.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { startServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { expectListenOptionError, optionError } from '../helpers/option-errors.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const LANES = ['high', 'normal', 'low'] as const;
type Lane = (typeof LANES)[number];
/** Entries per read at most: readBatch per lane, times the lanes (the budget of one priority read). */
const READ_BATCH = 10;
const MAX_READ = READ_BATCH * LANES.length;

const handled: { lane: Lane; n: number }[] = [];
/** `OrdersController` handlers running now, and the most that ran at once. */
const running = { now: 0, most: 0 };
const laneOf = (stream: string): Lane => stream.slice('orders:'.length) as Lane;

@Controller()
class OrdersController {
  // concurrency 1: handlers start one by one, in the order the lanes hand them out.
  @EventPattern<string>('orders', { priorities: [...LANES], concurrency: 1 })
  async onOrder(@Payload() order: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    handled.push({ lane: laneOf(ctx.getStream()), n: order.n });
    running.most = Math.max(running.most, ++running.now);
    // Let the reader read on while this handler runs, so entries queue behind it.
    await new Promise((resolve) => setImmediate(resolve));
    running.now--;
  }

  @MessagePattern<string>('quotes', { priorities: ['urgent', 'later'] })
  quote(@Payload() item: string, @Ctx() ctx: RedisStreamsContext): string {
    return `${item}@${ctx.getStream()}`;
  }
}

/** Resolved to let the held handlers of `HeldController` run. */
let release: () => void = () => undefined;
let released = Promise.resolve();

@Controller()
class HeldController {
  @EventPattern<string>('held', { priorities: [...LANES], concurrency: 1 })
  async onHeld(@Payload() entry: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    handled.push({ lane: ctx.getStream().slice('held:'.length) as Lane, n: entry.n });
    await released;
  }
}

@Controller()
class TwoLanesController {
  @EventPattern<string>('two-lanes', { priorities: ['high', 'low'], concurrency: 1 })
  async onEntry(@Payload() entry: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    handled.push({ lane: ctx.getStream().slice('two-lanes:'.length) as Lane, n: entry.n });
    await released;
  }
}

/** Batches `BulkController` got: the lane stream and the `n`s of each. */
const batches: { stream: string; ns: number[] }[] = [];

@Controller()
class BulkController {
  @EventPattern<string>('bulk', { priorities: [...LANES], batch: { size: 5, waitMs: 20 } })
  onBatch(@Payload() entries: { n: number }[], @Ctx() ctx: RedisStreamsBatchContext): void {
    batches.push({ stream: ctx.getStream(), ns: entries.map((entry) => entry.n) });
  }

  /** Fails on `poison` entries: recovery dead-letters them from their own lane. */
  @EventPattern<string>('risky', { priorities: [...LANES], maxDeliveries: 1, minIdleTime: 100 })
  onRisky(@Payload() entry: { n: number; poison?: boolean }, @Ctx() ctx: RedisStreamsContext): void {
    if (entry.poison === true) throw new Error(`entry ${entry.n} is poison`);
    handled.push({ lane: ctx.getStream().slice('risky:'.length) as Lane, n: entry.n });
  }
}

function positions(lane: Lane): number[] {
  return handled.flatMap((entry, index) => (entry.lane === lane ? [index] : []));
}

describe('priority lanes (real redis-server)', () => {
  const redis = useRedisServer();
  const apps: INestMicroservice[] = [];

  async function start(options: Partial<RedisStreamsServerOptions> = {}, controllers: Type[] = [OrdersController]): Promise<void> {
    const { app } = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'c1', blockMs: 100, concurrency: 1, prefetch: MAX_READ, readBatch: READ_BATCH, ...options },
      controllers,
    );
    apps.push(app);
  }

  async function backlog(counts: Record<Lane, number>, pattern = 'orders'): Promise<void> {
    const pipeline = redis.client.pipeline();
    for (const lane of LANES) {
      for (let n = 0; n < counts[lane]; n++) pipeline.xadd(`${pattern}:${lane}`, '*', 'pattern', pattern, 'data', JSON.stringify({ n }));
    }
    await pipeline.exec();
  }

  async function nothingPending(): Promise<boolean> {
    const counts = await Promise.all(LANES.map((lane) => pendingCount(redis.client, `orders:${lane}`, 'g')));
    return counts.every((count) => count === 0);
  }

  beforeEach(async () => {
    await redis.client.flushall();
    handled.length = 0;
    batches.length = 0;
    running.most = 0;
  });

  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it('a backlog in all three lanes is handled high first: every high entry before half of normal and low, normal drained before low', async () => {
    await backlog({ high: 60, normal: 60, low: 60 });
    await start();
    await waitFor(() => handled.length >= 180, '180 entries handled');
    const lastHigh = Math.max(...positions("high"));
    // The starvation bound lets some normal and low entries through before high is drained (one each per read), not half.
    expect(positions('normal').filter((at) => at < lastHigh).length).toBeLessThan(30);
    expect(positions('low').filter((at) => at < lastHigh).length).toBeLessThan(30);
    expect(Math.max(...positions('normal'))).toBeLessThan(Math.max(...positions('low')));
    // Within a lane, the stream's order.
    for (const lane of LANES) expect(handled.filter((entry) => entry.lane === lane).map((entry) => entry.n)).toEqual(Array.from({ length: 60 }, (_, n) => n));
    await waitFor(nothingPending, 'nothing pending in any lane');
  });

  it('starvation bound: under a flood of high, low gets an entry in the first read after STARVATION_LIMIT entries went without one', async () => {
    await backlog({ high: 400, normal: 0, low: 8 });
    await start();
    await waitFor(() => handled.length >= 408, '408 entries handled');
    const low = positions('low');
    expect(low).toHaveLength(8);
    // Gaps before the first low entry and between two: under the limit when a read starts, plus that
    // read's and the due read's other entries.
    const gaps = low.map((at, i) => at - (i === 0 ? -1 : (low[i - 1] as number)) - 1);
    for (const gap of gaps) expect(gap).toBeLessThan(STARVATION_LIMIT + 2 * MAX_READ);
    // All of them long before the flood is drained.
    expect(Math.max(...low)).toBeLessThan(Math.max(...positions('high')));
    await waitFor(nothingPending, 'nothing pending in any lane');
  });

  it('handlers start in the order the reads took the entries: a due lower entry waits behind the high entries read before it', async () => {
    released = new Promise<void>((resolve) => (release = resolve));
    await backlog({ high: 100, normal: 5, low: 5 }, 'held');
    // Small reads (readBatch 2: 6 entries each) fill the 30 slots while the first handler is held.
    await start({ readBatch: 2 }, [HeldController]);
    const pending = async () => (await Promise.all(LANES.map((lane) => pendingCount(redis.client, `held:${lane}`, 'g')))).reduce((a, b) => a + b);
    await waitFor(async () => (await pending()) >= MAX_READ, 'the prefetch filled');
    release();
    await waitFor(() => handled.length >= 110, '110 entries handled');
    const firstNormal = handled.findIndex((entry) => entry.lane === 'normal');
    // STARVATION_LIMIT high entries were read before normal became due, and they start first.
    expect(firstNormal).toBeGreaterThanOrEqual(STARVATION_LIMIT);
    expect(handled.slice(0, firstNormal).every((entry) => entry.lane === 'high')).toBe(true);
  });

  it('nothing is lost while entries arrive in every lane as the server reads (blocking and filling reads in turn); extras.concurrency holds for the lanes together', async () => {
    await start({ concurrency: 4 });
    const published = new Set<string>();
    for (let round = 0; round < 40; round++) {
      const lane = LANES[round % LANES.length] as Lane;
      const pipeline = redis.client.pipeline();
      for (let i = 0; i < 5; i++) pipeline.xadd(`orders:${lane}`, '*', 'pattern', 'orders', 'data', JSON.stringify({ n: round * 5 + i }));
      await pipeline.exec();
      for (let i = 0; i < 5; i++) published.add(`${lane}:${round * 5 + i}`);
      // Now and then let the reader go idle, so the next entries wake a blocked read.
      if (round % 10 === 9) await waitFor(() => handled.length >= published.size, 'the entries so far handled');
    }
    await waitFor(() => handled.length >= published.size, `${published.size} entries handled`);
    const seen = new Set(handled.map(({ lane, n }) => `${lane}:${n}`));
    for (const id of published) expect(seen.has(id), id).toBe(true);
    expect(handled).toHaveLength(published.size);
    // The server would run 4 at once; the pattern's concurrency 1 covers all three lanes.
    expect(running.most).toBe(1);
    await waitFor(nothingPending, 'nothing pending in any lane');
    expect(await redis.client.exists('orders')).toBe(0);
  });

  it('entries in the pattern\'s own stream (a producer without the priorities option) are reported at start-up: nobody reads them', async () => {
    const warnings: string[] = [];
    Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (message: unknown) => warnings.push(String(message)), debug: () => undefined, verbose: () => undefined, fatal: () => undefined } as never);
    try {
      await redis.client.xadd('orders', '*', 'pattern', 'orders', 'data', '{"n":1}');
      const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
      server.addHandler('orders', async () => undefined, true, { priorities: [...LANES] });
      const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
      apps.push(server as unknown as INestMicroservice);
      expect(error).toBeUndefined();
      await waitFor(() => warnings.some((line) => line.includes('"orders" holds 1 entries') && line.includes('priority lanes')), 'the warning');
    } finally {
      Logger.overrideLogger(true as never);
    }
  });

  it('per lane, as partitions: batches hold entries of one lane, a poison entry is dead-lettered from its lane\'s own dead-letter stream', async () => {
    await start({ concurrency: 4, recovery: { interval: 100, minIdleTime: 100 } }, [BulkController]);
    await backlog({ high: 10, normal: 10, low: 10 }, 'bulk');
    await waitFor(() => batches.reduce((sum, batch) => sum + batch.ns.length, 0) >= 30, '30 bulk entries in batches');
    for (const lane of LANES) {
      const ofLane = batches.filter((batch) => batch.stream === `bulk:${lane}`).flatMap((batch) => batch.ns);
      expect(ofLane.sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, n) => n));
    }
    await redis.client.xadd('risky:low', '*', 'pattern', 'risky', 'data', JSON.stringify({ n: 7, poison: true }));
    await redis.client.xadd('risky:high', '*', 'pattern', 'risky', 'data', JSON.stringify({ n: 8 }));
    await waitFor(async () => (await redis.client.xlen('{risky:low}:dead')) === 1, 'the poison entry dead-lettered from risky:low');
    expect(handled).toEqual([{ lane: 'high', n: 8 }]);
    expect(await redis.client.exists('{risky:high}:dead')).toBe(0);
    await waitFor(async () => (await pendingCount(redis.client, 'risky:low', 'g')) === 0, 'nothing pending in risky:low');
  });

  it('lanes flushed away under a running server (NOGROUP from the read script) are recreated and read again', async () => {
    await start();
    await backlog({ high: 1, normal: 1, low: 1 });
    await waitFor(() => handled.length >= 3, 'the first 3 entries handled');
    await redis.client.flushall();
    await waitFor(async () => (await redis.client.exists('orders:high', 'orders:normal', 'orders:low')) === 3, 'the lanes recreated with their group');
    await backlog({ high: 2, normal: 2, low: 2 });
    await waitFor(() => handled.length >= 9, 'the entries added after the flush handled');
    await waitFor(nothingPending, 'nothing pending in any lane');
  });

  it('a lane whose group is gone fails the read before any lane is read: no entry is left pending outside a reply (recovery off)', async () => {
    released = new Promise<void>((resolve) => (release = resolve));
    // One more than a read takes (readBatch 4 × 2 lanes): the first read fills the prefetch, the
    // next one finds a single entry in high and budget left for low.
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < 9; n++) pipeline.xadd('two-lanes:high', '*', 'pattern', 'two-lanes', 'data', JSON.stringify({ n }));
    await pipeline.exec();
    await start({ readBatch: 4, prefetch: 8, recovery: false }, [TwoLanesController]);
    await waitFor(async () => (await pendingCount(redis.client, 'two-lanes:high', 'g')) === 8, 'the prefetch filled from high');
    // The reader waits for slots, no read in flight (a blocked read would be woken with NOGROUP at once).
    await redis.client.xgroup('DESTROY', 'two-lanes:low', 'g');
    release();
    // Without recovery, an entry the failed read took from high would wait for ever.
    await waitFor(() => handled.length >= 9, 'all 9 entries handled once low\'s group is recreated', { timeout: 10_000 });
    expect(handled.map(({ n }) => n).sort((a, b) => a - b)).toEqual(Array.from({ length: 9 }, (_, n) => n));
    await waitFor(async () => (await pendingCount(redis.client, 'two-lanes:high', 'g')) === 0, 'nothing pending in high');
    expect(await pendingCount(redis.client, 'two-lanes:low', 'g')).toBe(0);
  });

  it('a @MessagePattern with lanes answers requests written to any lane', async () => {
    await start();
    const replyTo = 'test:replies';
    await redis.client.xgroup('CREATE', replyTo, 'r', '0', 'MKSTREAM');
    for (const lane of ['later', 'urgent']) {
      await redis.client.xadd(`quotes:${lane}`, '*', 'pattern', 'quotes', 'data', JSON.stringify('tea'), 'id', `req-${lane}`, 'replyTo', replyTo);
    }
    await waitFor(async () => (await redis.client.xlen(replyTo)) >= 2, 'two replies');
    const replies = (await redis.client.xrange(replyTo, '-', '+')).map(([, fields]) => fields.join(' '));
    expect(replies.join('\n')).toContain('tea@quotes:urgent');
    expect(replies.join('\n')).toContain('tea@quotes:later');
  });
});

describe('extras.priorities is validated in listen(), before any command', () => {
  const redis = useRedisServer();
  const option = 'extras.priorities (handler "bad-lanes")';

  function controllerWith(extras: Record<string, unknown>, message = false): Type {
    if (message) {
      @Controller()
      class MessageLanes {
        @MessagePattern<string>('bad-lanes', extras)
        on(): number {
          return 1;
        }
      }
      return MessageLanes;
    }
    @Controller()
    class EventLanes {
      @EventPattern<string>('bad-lanes', extras)
      on(): void {}
    }
    return EventLanes;
  }

  const cases: Array<[string, Record<string, unknown>]> = [
    ['not an array', { priorities: 'high' }],
    ['empty', { priorities: [] }],
    ['more than 10 lanes', { priorities: Array.from({ length: 11 }, (_, i) => `l${i}`) }],
    ['a lane twice', { priorities: ['high', 'low', 'high'] }],
    ['an empty name', { priorities: ['high', ''] }],
    ['a name with ":"', { priorities: ['high', 'a:b'] }],
    ['a name of ":" only', { priorities: [':'] }],
    ['a name with a hash tag', { priorities: ['{x}'] }],
    ['a partition-like name', { priorities: ['p0', 'p1'] }],
    ['a number', { priorities: ['high', 1] }],
    ['with partitions', { priorities: ['high', 'low'], partitions: 2 }],
    ['with rateLimit', { priorities: ['high', 'low'], rateLimit: { max: 10, per: 1000 } }],
    ['with globalConcurrency', { priorities: ['high', 'low'], globalConcurrency: 2 }],
  ];
  for (const [title, extras] of cases) {
    it(`${title} → RedisStreamsOptionError naming "${option}"`, () =>
      expectListenOptionError(controllerWith(extras), redis.server.url, option, redis.client, 'bad-lanes:high'));
  }

  it('two groups of one pattern with other lanes → RedisStreamsOptionError naming the option', async () => {
    @Controller()
    class Disagreeing {
      @EventPattern<string>('bad-lanes', { priorities: ['high', 'low'] })
      one(): void {}
      @EventPattern<string>('bad-lanes', { priorities: ['low', 'high'], group: 'other' })
      two(): void {}
    }
    await expectListenOptionError(Disagreeing, redis.server.url, option, redis.client, 'bad-lanes:high');
  });

  it('a @MessagePattern with valid lanes listens', async () => {
    const { app } = await startServer({ connection: redis.server.url, group: 'g' }, [controllerWith({ priorities: ['a', 'b'] }, true)]);
    await app.close();
  });
});

describe('priority lanes (pure)', () => {
  it('names lane l of a stream "<stream>:<l>", highest first; the default lane is the middle one', () => {
    expect(priorityStreamKeys('orders', ['high', 'normal', 'low'])).toEqual(['orders:high', 'orders:normal', 'orders:low']);
    expect(defaultPriorityOf(['high', 'normal', 'low'])).toBe('normal');
    expect(defaultPriorityOf(['high', 'low'])).toBe('low');
    expect(defaultPriorityOf(['only'])).toBe('only');
    expect(priorityLanesOption('x', undefined)).toBeUndefined();
    expect(priorityLanesOption('x', ['a-1', 'b_2', 'c.3'])).toEqual(['a-1', 'b_2', 'c.3']);
  });

  it('a bad lane list is refused saying what is wrong with it, not its type', () => {
    const message = (value: unknown) => optionError(() => priorityLanesOption('extras.priorities (handler "orders")', value)).message;
    expect(message([])).toBe('Invalid option "extras.priorities (handler "orders")": must list at least one lane (lane names, highest first), got an empty array');
    expect(message(Array.from({ length: 11 }, (_, i) => `l${i}`))).toContain('lists 11 lanes, at most 10');
    expect(message('high')).toContain('must be an array of 1 to 10 lane names, highest first, got "high"');
  });

  it('on a Cluster the lanes must share a hash slot: a pattern with a hash tag passes, one without is refused naming the option', () => {
    expect(() => checkLanesShareSlot('extras.priorities (handler "{orders}")', '{orders}', ['high', 'low'])).not.toThrow();
    const error = optionError(() => checkLanesShareSlot('extras.priorities (handler "orders")', 'orders', ['high', 'normal', 'low']));
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect(error.option).toBe('extras.priorities (handler "orders")');
    expect(error.message).toContain('{orders}');
  });
});
