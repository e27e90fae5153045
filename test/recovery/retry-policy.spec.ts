import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload, RpcException } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamInspector } from '../../src/claim/stream-inspector.js';
import { retryRecordKey } from '../../src/claim/retry-record.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import { resolveRetryPolicy } from '../../src/recovery/retry-policy.js';
import { retryTickInterval } from '../../src/recovery/retry-ticks.js';
import { claimDueRetries, releaseForRetry } from '../../src/recovery/retry-release.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { resolveHandlerExtras } from '../../src/server/handler-extras.js';
import { resolveServerOptions, type RedisStreamsServerOptions } from '../../src/server/options.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** One handler run: Redis' clock at its start, and how it ended. */
interface Run {
  id: string;
  deliveryCount: number;
  consumer: string;
  at: number;
  failed: boolean;
}

let runs: Run[] = [];
let clock: Redis | undefined;

async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = (await redis.time()) as [number | string, number | string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** `{ failures }`: fails the first `failures` deliveries; `{ p }`: fails each one with probability p. */
@Controller()
class FlakyController {
  @EventPattern<string>('jobs')
  async onJob(@Payload() data: { failures?: number; p?: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    const at = await redisNow(clock as Redis);
    const count = ctx.getDeliveryCount();
    const failed = data.p !== undefined ? Math.random() < data.p : count <= (data.failures ?? 0);
    runs.push({ id: ctx.getId(), deliveryCount: count, consumer: ctx.getConsumer(), at, failed });
    if (failed) throw new RpcException(`job failed on delivery ${count}`);
  }
}

describe('retry policy: backoff between deliveries of failed entries (real redis-server)', () => {
  const redis = useRedisServer();
  const servers: RunningServer[] = [];
  let n = 0;

  afterEach(async () => {
    for (const running of servers.splice(0)) await running.app.close();
    runs = [];
  });

  async function start(overrides: Partial<RedisStreamsServerOptions>, deadLetters?: DeadLetterNotice[]): Promise<RunningServer> {
    clock = redis.client;
    const running = await startServer(
      {
        connection: redis.server.url,
        group: 'g',
        consumer: `c${servers.length}`,
        prefix: `p${n}:`,
        blockMs: 100,
        ...overrides,
      },
      [FlakyController],
    );
    if (deadLetters) running.server.on('deadLetter', (letter) => deadLetters.push(letter));
    servers.push(running);
    return running;
  }

  function stream(): string {
    return `p${n}:jobs`;
  }

  it('validates policies and names the bad option', () => {
    const bad: Array<[unknown, string]> = [
      [{ type: 'linear', delay: 5 }, 'recovery.retry.type'],
      [{ type: 'fixed' }, 'recovery.retry.delay'],
      [{ type: 'fixed', delay: 0 }, 'recovery.retry.delay'],
      [{ type: 'fixed', delay: 2 ** 31 }, 'recovery.retry.delay'],
      [{ type: 'fixed', delay: 'soon' }, 'recovery.retry.delay'],
      [{ type: 'fixed', delay: 5, base: 3 }, 'recovery.retry.base'],
      [{ type: 'exponential', base: 'PT1S', factor: 0.5 }, 'recovery.retry.factor'],
      [{ type: 'exponential', base: 'PT1S', max: 'PT0.5S' }, 'recovery.retry.max'],
      [{ type: 'exponential', base: 100, jitter: 2 }, 'recovery.retry.jitter'],
      [{ type: 'exponential', base: 100, max: 'P30D' }, 'recovery.retry.max'],
      [7, 'recovery.retry'],
      [null, 'recovery.retry'],
    ];
    for (const [retry, option] of bad) {
      let caught: unknown;
      try {
        resolveServerOptions({ group: 'g', recovery: { retry: retry as never } });
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(retry)).toBeInstanceOf(RedisStreamsOptionError);
      expect((caught as RedisStreamsOptionError).option).toBe(option);
    }
    expect(() => resolveServerOptions({ group: 'g', consumer: 'retry' })).toThrow(/recovery\.retryConsumer/);
    expect(() => resolveServerOptions({ group: 'g', recovery: { retryConsumer: 'handoff' } })).toThrow(/recovery\.retryConsumer/);
    const server = resolveServerOptions({ group: 'g' });
    expect(() => resolveHandlerExtras('jobs', { retry: { type: 'fixed', delay: -1 } }, server)).toThrow(/extras\.retry\.delay \(handler "jobs"\)/);
    expect(() => resolveHandlerExtras('jobs', { recovery: false, retry: { type: 'fixed', delay: 1 } }, server)).toThrow(/extras\.retry \(handler "jobs"\).*recovery: false/);
    expect(resolveHandlerExtras('jobs', { retry: false }, server).retry).toBe(false);

    // Durations: ms or ISO-8601; the exponential wait grows by `factor` per delivery up to `max`.
    const exponential = resolveRetryPolicy('retry', { type: 'exponential', base: 'PT1S', factor: 2, max: 'PT1M' });
    expect([1, 2, 3, 6, 7, 8, 20].map((count) => exponential?.delayFor(count, undefined))).toEqual([1000, 2000, 4000, 32000, 60000, 60000, 60000]);
    expect(resolveRetryPolicy('retry', { type: 'fixed', delay: 'PT0.25S' })?.delayFor(9, undefined)).toBe(250);
    const jittered = resolveRetryPolicy('retry', { type: 'exponential', base: 1000, jitter: 0.5 });
    for (let i = 0; i < 50; i++) expect(jittered?.delayFor(2, undefined)).toBeGreaterThanOrEqual(1000);
    for (let i = 0; i < 50; i++) expect(jittered?.delayFor(2, undefined)).toBeLessThanOrEqual(2000);
    const custom = resolveRetryPolicy('extras.retry', (count: number, error: unknown) => (String(error) === 'slow' ? count * 1000 : -1));
    expect(custom?.delayFor(3, 'slow')).toBe(3000);
    expect(() => custom?.delayFor(3, 'other')).toThrow(/extras\.retry.*returned -1/);

    // Retry ticks: a quarter of the shortest wait, at least 50 ms, at most the interval.
    expect(retryTickInterval([undefined], 7500)).toBeUndefined();
    expect(retryTickInterval([resolveRetryPolicy('r', { type: 'exponential', base: 200 })], 7500)).toBe(50);
    expect(retryTickInterval([resolveRetryPolicy('r', { type: 'fixed', delay: 'PT2S' }), undefined], 7500)).toBe(500);
    expect(retryTickInterval([resolveRetryPolicy('r', { type: 'fixed', delay: 'PT2S' })], 100)).toBe(100);
  });

  it('release and claim scripts: owner-checked, the release keeps the count and writes the record, a claim takes only due entries of the retry consumer', async () => {
    n++;
    const key = `scripts${n}`;
    const client = redis.client;
    await client.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    const a = (await client.xadd(key, '*', 'k', 'a')) as string;
    const b = (await client.xadd(key, '*', 'k', 'b')) as string;
    await client.xreadgroup('GROUP', 'g', 'w1', 'STREAMS', key, '>');
    await client.xclaim(key, 'g', 'w2', 0, b, 'JUSTID');
    const failed = (id: string) => ({ id, deliveryCount: 1, delayMs: 5_000, error: 'boom' });
    const released = await releaseForRetry(client, { stream: key, group: 'g', consumer: 'w1', retryConsumer: 'retry', entries: [failed(a), failed(b)] });
    expect(released).toEqual({ released: [a], lost: [{ id: b, reason: 'not_owner', owner: 'w2' }] });
    expect(await pendingRows(client, key, 'g')).toMatchObject([{ id: a, consumer: 'retry', deliveries: 1 }, { id: b, consumer: 'w2', deliveries: 1 }]);
    expect(await client.exists(retryRecordKey(key, 'g', a), retryRecordKey(key, 'g', b))).toBe(1);
    expect(await client.pttl(retryRecordKey(key, 'g', a))).toBeGreaterThan(5_000);

    const notYet = await claimDueRetries(client, { stream: key, group: 'g', retryConsumer: 'retry', consumer: 'w3', entries: [{ id: a, dueMs: 5_000, deliveryCount: 1 }, { id: b, dueMs: 0, deliveryCount: 1 }] });
    expect(notYet).toEqual({ claimed: [], skipped: [{ id: a, status: 'not_due' }, { id: b, status: 'not_owner' }] });
    // Scanned at another delivery count (it went around again since): refused, the next scan decides.
    const stale = await claimDueRetries(client, { stream: key, group: 'g', retryConsumer: 'retry', consumer: 'w3', entries: [{ id: a, dueMs: 0, deliveryCount: 2 }] });
    expect(stale).toEqual({ claimed: [], skipped: [{ id: a, status: 'not_due' }] });
    const due = await claimDueRetries(client, { stream: key, group: 'g', retryConsumer: 'retry', consumer: 'w3', entries: [{ id: a, dueMs: 0, deliveryCount: 1 }] });
    expect(due.claimed.map((entry) => [entry.id, entry.flat])).toEqual([[a, [Buffer.from('k'), Buffer.from('a')]]]);
    expect(await pendingRows(client, key, 'g')).toMatchObject([{ id: a, consumer: 'w3', deliveries: 2 }, { id: b, consumer: 'w2' }]);
    // Taken: a second claimer gets nothing, even with no wait at all.
    const again = await claimDueRetries(client, { stream: key, group: 'g', retryConsumer: 'retry', consumer: 'w4', entries: [{ id: a, dueMs: 0, deliveryCount: 2 }] });
    expect(again).toEqual({ claimed: [], skipped: [{ id: a, status: 'not_owner' }] });
  });

  it('exponential base 200 ms factor 2: deliveries 200, 400, 800 ms apart (Redis clock), then success; minIdleTime plays no part', async () => {
    n++;
    await start({ recovery: { minIdleTime: 60_000, retry: { type: 'exponential', base: 200, factor: 2 } } });
    const id = (await xaddEvent(redis.client, stream(), 'jobs', { failures: 3 })) as string;
    await waitFor(async () => runs.some((run) => !run.failed) && (await pendingRows(redis.client, stream(), 'g')).length === 0, 'the 4th delivery to succeed and be acked');
    expect(runs.map((run) => [run.id, run.deliveryCount, run.failed])).toEqual([
      [id, 1, true],
      [id, 2, true],
      [id, 3, true],
      [id, 4, false],
    ]);
    const gaps = runs.slice(1).map((run, i) => run.at - (runs[i] as Run).at);
    [200, 400, 800].forEach((wait, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(wait);
      // On schedule: long before minIdleTime (60 s) would have brought it back.
      expect(gaps[i]).toBeLessThan(wait + 5_000);
    });
  });

  it('with maxDeliveries 3 the entry is dead-lettered after its 3rd failure, with delivery count and last error; no 4th run', async () => {
    n++;
    const letters: DeadLetterNotice[] = [];
    await start({ recovery: { minIdleTime: 60_000, maxDeliveries: 3, retry: { type: 'exponential', base: 200, factor: 2 } } }, letters);
    const id = (await xaddEvent(redis.client, stream(), 'jobs', { failures: 10 })) as string;
    const dead = `{${stream()}}:dead`;
    await waitFor(async () => (await redis.client.xlen(dead)) === 1, 'the dead letter');
    expect(runs.map((run) => run.deliveryCount)).toEqual([1, 2, 3]);
    expect(runs[1]!.at - runs[0]!.at).toBeGreaterThanOrEqual(200);
    expect(runs[2]!.at - runs[1]!.at).toBeGreaterThanOrEqual(400);
    const [[deadId, flat]] = (await redis.client.xrange(dead, '-', '+')) as [[string, string[]]];
    const letter = parseDeadLetter(deadId, flat);
    expect(letter).toMatchObject({ sourceId: id, deliveryCount: 3, reason: 'max_deliveries', error: 'RpcException: job failed on delivery 3', consumer: 'retry' });
    expect(letters.map((notice) => [notice.id, notice.deliveryCount, notice.error])).toEqual([[id, 3, 'RpcException: job failed on delivery 3']]);
    expect(await pendingRows(redis.client, stream(), 'g')).toEqual([]);
    expect(await redis.client.exists(retryRecordKey(stream(), 'g', id))).toBe(0);
  });

  it('the inspection service shows a waiting entry: retry consumer, next retry time on Redis clock, last error, failing consumer', async () => {
    n++;
    await start({ recovery: { minIdleTime: 60_000, retry: { type: 'fixed', delay: 'PT30S' } } });
    const id = (await xaddEvent(redis.client, stream(), 'jobs', { failures: 1 })) as string;
    await waitFor(async () => (await pendingRows(redis.client, stream(), 'g'))[0]?.consumer === 'retry', 'the release to the retry consumer');
    const before = await redisNow(redis.client);
    const [row] = await new StreamInspector(redis.client).pendingRange(stream(), 'g');
    const after = await redisNow(redis.client);
    const failedAt = runs[0]!.at;
    expect(row).toMatchObject({ id, consumer: 'retry', deliveryCount: 1, retry: { delayMs: 30_000, failedBy: 'c0', lastError: 'RpcException: job failed on delivery 1' } });
    // Released after the failure, and before we looked.
    expect(row!.retry!.nextRetryAt).toBeGreaterThanOrEqual(failedAt + 30_000);
    expect(row!.retry!.nextRetryAt).toBeLessThanOrEqual(after + 30_000);
    expect(before).toBeLessThanOrEqual(after);
    // Opt-out: plain rows, no extra command.
    const [plain] = await new StreamInspector(redis.client).pendingRange(stream(), 'g', { retryConsumer: false });
    expect(plain).toEqual({ id, consumer: 'retry', idleMs: plain!.idleMs, deliveryCount: 1 });
  });

  it('without a policy (the default) a failed entry stays with its consumer until minIdleTime, as before', async () => {
    n++;
    await start({ recovery: { minIdleTime: 60_000 } });
    const id = (await xaddEvent(redis.client, stream(), 'jobs', { failures: 1 })) as string;
    await waitFor(() => runs.length === 1, 'the failed run');
    await waitFor(async () => (await pendingRows(redis.client, stream(), 'g'))[0]?.consumer === 'c0', 'the entry pending');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await pendingRows(redis.client, stream(), 'g')).toMatchObject([{ id, consumer: 'c0', deliveries: 1 }]);
    expect(await redis.client.exists(retryRecordKey(stream(), 'g', id))).toBe(0);
  });

  it('two workers, entries failing twice each: every retry happens once (delivery counts 1, 2, 3 exactly once per id), pending empty', async () => {
    n++;
    const options = { recovery: { minIdleTime: 60_000, retry: { type: 'fixed' as const, delay: 100 } } };
    await start(options);
    await start(options);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await xaddEvent(redis.client, stream(), 'jobs', { failures: 2 })) as string);
    await waitFor(async () => runs.filter((run) => !run.failed).length >= ids.length && (await pendingRows(redis.client, stream(), 'g')).length === 0, 'every entry to succeed', { timeout: 30_000 });
    for (const id of ids) {
      const mine = runs.filter((run) => run.id === id).sort((a, b) => a.deliveryCount - b.deliveryCount);
      expect(mine.map((run) => [run.deliveryCount, run.failed])).toEqual([[1, true], [2, true], [3, false]]);
      expect(mine[1]!.at - mine[0]!.at).toBeGreaterThanOrEqual(100);
      expect(mine[2]!.at - mine[1]!.at).toBeGreaterThanOrEqual(100);
    }
    expect(new Set(runs.map((run) => run.consumer))).toEqual(new Set(['c0', 'c1']));
  });

  it('two workers, random failures: every id handled or dead-lettered exactly once, no delivery run twice, pending empty', async () => {
    n++;
    const letters: DeadLetterNotice[] = [];
    const options = { recovery: { minIdleTime: 60_000, maxDeliveries: 4, retry: { type: 'exponential' as const, base: 40, factor: 2, max: 200, jitter: 0.5 } } };
    await start(options, letters);
    await start(options, letters);
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push((await xaddEvent(redis.client, stream(), 'jobs', { p: 0.4 })) as string);
    const done = () => new Set([...runs.filter((run) => !run.failed).map((run) => run.id), ...letters.map((letter) => letter.id)]).size;
    await waitFor(async () => done() === ids.length && (await pendingRows(redis.client, stream(), 'g')).length === 0, 'every id handled or dead-lettered', { timeout: 60_000 });
    const handled = new Set(runs.filter((run) => !run.failed).map((run) => run.id));
    const dead = letters.map((letter) => letter.id);
    expect(new Set(dead).size).toBe(dead.length);
    expect(dead.filter((id) => handled.has(id))).toEqual([]);
    expect(new Set([...handled, ...dead])).toEqual(new Set(ids));
    expect(await redis.client.xlen(`{${stream()}}:dead`)).toBe(dead.length);
    for (const id of ids) {
      const counts = runs.filter((run) => run.id === id).map((run) => run.deliveryCount).sort((a, b) => a - b);
      expect(counts).toEqual(counts.map((_, i) => i + 1)); // each delivery ran once, none skipped
      if (dead.includes(id)) expect(counts).toEqual([1, 2, 3, 4]);
    }
    expect(await pendingRows(redis.client, stream(), 'g')).toEqual([]);
  });
});
