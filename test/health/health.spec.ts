import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { HealthCheckService } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsHealthIndicator, RedisStreamsHealthModule, type RedisStreamsHealthThresholds } from '../../src/health/index.js';
import { livenessProblems, readinessProblems } from '../../src/health/health-verdict.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import type { RedisStreamsLiveness } from '../../src/server/liveness.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = 'health-orders';
const BLOCK_MS = 200;
/** A read may stay blocked (or the loop go without a returned read) BLOCK_MS + this. */
const READ_GRACE_MS = 300;

/** Entries whose `hold` is true wait for `release()`: their handlers keep their prefetch slots. */
const work = {
  handled: [] as number[],
  gate: Promise.resolve(),
  open: () => undefined as void,
  hold(): void {
    this.gate = new Promise<void>((resolve) => (this.open = resolve));
  },
  release(): void {
    this.open();
  },
};
const ready = { thresholds: undefined as RedisStreamsHealthThresholds | undefined, readGraceMs: READ_GRACE_MS };

@Controller()
class OrdersController {
  @EventPattern<string>(STREAM)
  async onOrder(@Payload() data: { n: number; hold?: boolean }): Promise<void> {
    if (data.hold) await work.gate;
    work.handled.push(data.n);
  }
}

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly streams: RedisStreamsHealthIndicator,
  ) {}

  @Get('live')
  live() {
    return this.health.check([() => this.streams.isAlive('streams', { readGraceMs: READ_GRACE_MS })]);
  }

  @Get('ready')
  ready() {
    return this.health.check([
      () => this.streams.isHealthy('streams', { readGraceMs: ready.readGraceMs, timeoutMs: 300, thresholds: ready.thresholds }),
    ]);
  }
}

@Module({ imports: [RedisStreamsHealthModule], controllers: [OrdersController, HealthController] })
class AppModule {}

interface HealthBody {
  status: string;
  details: { streams: { status: string; servers: Array<{ problems: string[]; streams?: Array<{ pending: number; lag: number | null; deadLetters: number }> }> } };
}

describe('RedisStreamsHealthIndicator over HTTP (terminus, hybrid app)', () => {
  const redis = useRedisServer();
  let app: INestApplication | undefined;
  let base = '';

  afterEach(async () => {
    work.release();
    ready.thresholds = undefined;
    ready.readGraceMs = READ_GRACE_MS;
    redis.server.resume();
    await app?.close();
    app = undefined;
    work.handled = [];
  });

  async function start(prefetch = 200): Promise<void> {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    const strategy = new RedisStreamsServer({
      connection: redis.server.url,
      group: 'billing',
      consumer: 'billing-1',
      blockMs: BLOCK_MS,
      prefetch,
      concurrency: Math.min(prefetch, 50),
      recovery: { minIdleTime: 60_000 },
    });
    app.connectMicroservice({ strategy }, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  }

  async function get(path: 'live' | 'ready'): Promise<{ code: number; body: HealthBody }> {
    const response = await fetch(`${base}/health/${path}`, { signal: AbortSignal.timeout(5_000) });
    return { code: response.status, body: (await response.json()) as HealthBody };
  }

  async function add(entries: Array<{ n: number; hold?: boolean }>): Promise<void> {
    const pipeline = redis.client.pipeline();
    for (const entry of entries) pipeline.xadd(STREAM, '*', 'pattern', STREAM, 'data', JSON.stringify(entry));
    await pipeline.exec();
  }

  async function until(path: 'live' | 'ready', code: number): Promise<HealthBody> {
    let last: { code: number; body: HealthBody } | undefined;
    await waitFor(async () => (last = await get(path)).code === code, `/health/${path} to answer ${code}`, { timeout: 10_000, interval: 50 });
    return (last as { body: HealthBody }).body;
  }

  it('is up while consuming; down while Redis is paused (SIGSTOP); up again after it resumes', async () => {
    await start();
    await add([1, 2, 3].map((n) => ({ n })));
    await waitFor(() => work.handled.length === 3, 'three entries handled');
    // Longer than blockMs + readGraceMs: the reader has completed reads all along.
    await new Promise((resolve) => setTimeout(resolve, BLOCK_MS + READ_GRACE_MS + 200));
    const live = await get('live');
    expect(live.code).toBe(200);
    expect(live.body.details.streams.status).toBe('up');
    expect((await get('ready')).code).toBe(200);

    redis.server.pause();
    const readyDown = await until('ready', 503);
    expect(readyDown.details.streams.servers[0]?.problems.join('\n')).toMatch(/PING did not complete within 300 ms|a read has been waiting for Redis/);
    const liveDown = await until('live', 503);
    expect(liveDown.details.streams.servers[0]?.problems.join('\n')).toMatch(/reader of group "billing": a read has been waiting for Redis for \d+ ms \(allowed 500 ms\)/);

    redis.server.resume();
    await until('live', 200);
    await until('ready', 200);
    await add([{ n: 4 }]);
    await waitFor(() => work.handled.includes(4), 'an entry added after the pause handled');
  });

  it('is down while the reader is stuck (handlers hold every prefetch slot) and up once they finish', async () => {
    await start(2);
    work.hold();
    await add([1, 2, 3].map((n) => ({ n, hold: true })));
    const body = await until('live', 503);
    expect(body.details.streams.servers[0]?.problems.join('\n')).toMatch(
      /reader of group "billing": no read returned for \d+ ms \(allowed 500 ms\); all 2 prefetch slots are held/,
    );
    expect(work.handled).toEqual([]);
    work.release();
    await waitFor(() => work.handled.length === 3, 'the held entries handled');
    await until('live', 200);
  });

  it('honours lag, pending and dead-letter thresholds per stream and group', async () => {
    await start(2);
    // Held handlers stall the reader (that is the test above): not what this test is about.
    ready.readGraceMs = 60_000;
    // Pending: two entries held by handlers (the prefetch), the others not yet delivered (lag).
    work.hold();
    await add([1, 2, 3, 4, 5, 6].map((n) => ({ n, hold: true })));
    await waitFor(async () => (await redis.client.xpending(STREAM, 'billing'))[0] === 2, 'two entries pending');

    // Redis 6.2 keeps no lag (no lagTracking capability): it is null there, and never above a threshold.
    const lagTracked = (await capabilitiesOf(redis.client)).lagTracking;
    ready.thresholds = { pending: 2, lag: 4, deadLetters: 0 };
    const at = await get('ready');
    expect(at.code).toBe(200);
    expect(at.body.details.streams.servers[0]?.streams).toEqual([{ stream: STREAM, group: 'billing', pending: 2, lag: lagTracked ? 4 : null, deadLetters: 0 }]);

    ready.thresholds = { pending: 1 };
    expect((await get('ready')).body.details.streams.servers[0]?.problems).toEqual([`"${STREAM}" (group "billing"): 2 pending entries, above 1`]);
    ready.thresholds = { lag: 3 };
    expect((await get('ready')).body.details.streams.servers[0]?.problems).toEqual(lagTracked ? [`"${STREAM}" (group "billing"): lag 4 is above 3`] : []);

    await redis.client.xadd(deadLetterKey(STREAM), '*', 'sourceId', '0-1');
    ready.thresholds = { deadLetters: 0 };
    const dead = await get('ready');
    expect(dead.code).toBe(503);
    expect(dead.body.details.streams.servers[0]?.problems).toEqual([`"${STREAM}" (group "billing"): 1 dead letters, above 0`]);

    work.release();
    await waitFor(() => work.handled.length === 6, 'every entry handled');
    ready.thresholds = { pending: 0, lag: 0, deadLetters: 1 };
    await until('ready', 200);
    await redis.client.del(deadLetterKey(STREAM));
  });

  it('is down when no server listens', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    const live = await get('live');
    expect(live.code).toBe(503);
    expect(live.body.details.streams).toMatchObject({ status: 'down', message: 'no RedisStreamsServer is listening in this process' });
  });
});

describe('health verdict of a snapshot', () => {
  const base: RedisStreamsLiveness = {
    consumer: 'c',
    state: 'listening',
    at: 100_000,
    blockMs: 5_000,
    connections: [{ name: 'commands', status: 'ready' }, { name: 'reader:g', status: 'ready' }],
    readers: [{ group: 'g', streams: ['s'], reading: true, readStartedAt: 90_000, lastReadAt: 90_000, since: 0, held: null }],
    streams: [{ stream: 's', group: 'g', deadLetterKey: '{s}:dead', paused: false }],
    prefetch: { size: 10, free: 10, inFlight: 0 },
    recovery: { scheduled: true, ticks: 9, failedTicksInARow: 0, lastTickAt: 99_000, lastError: null },
  };
  const limits = { readGraceMs: 5_000, maxFailedRecoveryTicks: 2 };

  it('counts a read blocked up to blockMs + readGraceMs as alive, and one blocked longer as stuck', () => {
    expect(readinessProblems(base, limits)).toEqual([]);
    const stuck = { ...base, readers: [{ ...base.readers[0]!, readStartedAt: 89_999 }] };
    expect(livenessProblems(stuck, limits)).toEqual(['reader of group "g": a read has been waiting for Redis for 10001 ms (allowed 10000 ms)']);
  });

  it('counts a reader quiet on purpose (its groups paused, or its shared limits granting nothing) as alive however long', () => {
    const quiet = { ...base.readers[0]!, reading: false, readStartedAt: null, lastReadAt: 1_000 };
    expect(livenessProblems({ ...base, readers: [quiet] }, limits)).toEqual(['reader of group "g": no read returned for 99000 ms (allowed 10000 ms)']);
    expect(livenessProblems({ ...base, readers: [{ ...quiet, held: 'paused' as const }] }, limits)).toEqual([]);
    expect(livenessProblems({ ...base, readers: [{ ...quiet, held: 'limited' as const }] }, limits)).toEqual([]);
  });

  it('is not ready when a connection is not ready or recovery ticks failed more than maxFailedRecoveryTicks in a row', () => {
    const reconnecting = { ...base, connections: [{ name: 'commands', status: 'reconnecting' }] };
    expect(readinessProblems(reconnecting, limits)).toEqual(['connection "commands" is reconnecting']);
    expect(livenessProblems(reconnecting, limits)).toEqual([]);
    const twice = { ...base, recovery: { ...base.recovery!, failedTicksInARow: 2, lastError: 'boom' } };
    expect(readinessProblems(twice, limits)).toEqual([]);
    const thrice = { ...base, recovery: { ...base.recovery!, failedTicksInARow: 3, lastError: 'boom' } };
    expect(readinessProblems(thrice, limits)).toEqual(['recovery: the last 3 ticks failed (last error: boom)']);
  });
});
