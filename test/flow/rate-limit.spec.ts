import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimitKey } from '../../src/flow/flow-keys.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { redisNow as redisNowOf } from '../../src/redis/server-time.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

interface Start {
  n: number;
  consumer: string;
  deliveryCount: number;
  /** Redis' clock when the handler started. */
  at: number;
}
const starts: Start[] = [];
const limitedErrors: unknown[] = [];
const tenantStarts: Array<{ tenant: string; n: number; deliveryCount: number; at: number }> = [];
let redisNow: () => Promise<number> = () => Promise.resolve(0);

const MAX = 10;
/** How late a handler's stamp of Redis' clock may come after its grant (60 unlimited entries start within it, far over the bound). */
const STAMP_SLACK_MS = 250;
const PER_MS = 500;

@Controller()
class LimitedController {
  @EventPattern<string>('limited', { rateLimit: { max: MAX, per: PER_MS } })
  async onLimited(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    starts.push({ n: data.n, consumer: ctx.getConsumer(), deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
  }

  @EventPattern<string>('api', { rateLimit: { max: 100, per: 'PT1S' } })
  async onApi(@Payload() data: { n: number; answer429?: boolean }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    starts.push({ n: data.n, consumer: ctx.getConsumer(), deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
    if (data.answer429 === true && ctx.getDeliveryCount() === 1) await ctx.rateLimited(700);
  }

  /** 10 a second, one at a time: a refill during a back-off would let all 10 start at once after it. */
  @EventPattern<string>('paced', { rateLimit: { max: 10, per: 1000 } })
  async onPaced(@Payload() data: { n: number; answer429?: boolean }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    starts.push({ n: data.n, consumer: ctx.getConsumer(), deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
    if (data.answer429 === true && ctx.getDeliveryCount() === 1) await ctx.rateLimited(1_000);
  }

  @EventPattern<string>('tenants', { rateLimit: { max: 2, per: 1000, key: (data: { tenant: string }) => data.tenant } })
  async onTenant(@Payload() data: { n: number; tenant: string }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    tenantStarts.push({ tenant: data.tenant, n: data.n, deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
  }

  /** Recovery left alone: a held entry waits in its worker; one token per 4 s, so the second waits long. */
  @EventPattern<string>('alone-tenants', { recovery: false, rateLimit: { max: 1, per: 4_000, key: (data: { tenant: string }) => data.tenant } })
  async onAloneTenant(@Payload() data: { n: number; tenant: string }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    tenantStarts.push({ tenant: data.tenant, n: data.n, deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
  }

  @EventPattern<string>('unlimited')
  async onUnlimited(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    try {
      await ctx.rateLimited(100);
    } catch (error) {
      limitedErrors.push(error);
    }
  }
}

/** A per-key limit alone in its group: its stream has a reader of its own. */
@Controller()
class TenantsOnlyController {
  @EventPattern<string>('tenants-only', { group: 'tenants', rateLimit: { max: 2, per: 1000, key: (data: { tenant: string }) => data.tenant } })
  async onTenant(@Payload() data: { n: number; tenant: string }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    tenantStarts.push({ tenant: data.tenant, n: data.n, deliveryCount: ctx.getDeliveryCount(), at: await redisNow() });
  }
}

const roomyStarts: Array<{ n: number; deliveryCount: number }> = [];
const ROOMY_MAX = 100_000;

/** A limit a backlog never reaches, alone in its group (its reader's commands are all the server sees). */
@Controller()
class RoomyController {
  @EventPattern<string>('roomy', { group: 'roomy', rateLimit: { max: ROOMY_MAX, per: 'PT1H' } })
  onRoomy(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    roomyStarts.push({ n: data.n, deliveryCount: ctx.getDeliveryCount() });
  }
}

/** Calls of each command Redis ran so far (INFO commandstats). */
async function commandCalls(redis: { info(section: string): Promise<string> }): Promise<Map<string, number>> {
  return new Map([...(await redis.info('commandstats')).matchAll(/cmdstat_(\w+):calls=(\d+)/g)].map((match) => [match[1] as string, Number(match[2])]));
}

/** The CLIENT LIST lines of connections blocked in `command`. */
async function blockedIn(redis: { client(subcommand: 'LIST'): Promise<unknown> }, command: string): Promise<string[]> {
  return String(await redis.client('LIST'))
    .split('\n')
    .filter((line) => line.includes(` cmd=${command} `) && /flags=\S*b/.test(line));
}

describe('extras.rateLimit: one token bucket in Redis for every worker of the group', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];
  redisNow = () => redisNowOf(redis.client);
  const start = (consumer: string) =>
    startServer({ connection: redis.server.url, group: 'g', consumer, blockMs: 200, recovery: { minIdleTime: 60_000, interval: 100, retry: { type: 'fixed', delay: 100 } } }, [LimitedController]);

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    starts.length = 0;
    limitedErrors.length = 0;
    tenantStarts.length = 0;
    roomyStarts.length = 0;
  });

  it('three workers together start at most max per period (plus the full bucket at first), each entry once, nothing lost', async () => {
    running.push(await start('w1'), await start('w2'), await start('w3'));
    const published = 60;
    for (let n = 0; n < published; n++) await xaddEvent(redis.client, 'limited', 'limited', { n });
    await waitFor(() => starts.length === published, `${published} handled`, { timeout: 20_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'limited', 'g')) === 0, 'every entry acked');

    expect(new Set(starts.map((s) => s.n)).size).toBe(published);
    // Entries beyond the limit were not read: none was delivered twice.
    expect(starts.every((s) => s.deliveryCount === 1)).toBe(true);
    // In any stretch of time t, at most MAX + MAX × t / PER_MS started (the bucket starts full).
    // A grant is taken before the read and the start is stamped in the handler, one round trip
    // later: on a loaded machine the stamps bunch up by more than the refill of a few tokens.
    const times = starts.map((s) => s.at).sort((a, b) => a - b);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) {
        const span = (times[j] as number) - (times[i] as number);
        expect(j - i + 1).toBeLessThanOrEqual(MAX + Math.floor((MAX * (span + STAMP_SLACK_MS)) / PER_MS));
      }
    }
    // 60 entries, 10 at once then 10 per 500 ms: at least 2.5 s from the first grant to the last.
    // The stamps lag their grants by up to the same slack (the first may lag more than the last);
    // a limit per worker instead of shared would take ~0.8 s, none ~0.
    expect((times[times.length - 1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(((published - MAX) / MAX) * PER_MS - STAMP_SLACK_MS);
    // Shared, not per worker: more than one worker took part.
    expect(new Set(starts.map((s) => s.consumer)).size).toBeGreaterThan(1);
  });

  it('a backlog under a limit it never reaches: tokens for several reads per script call, each entry once, the tokens not used given back', async () => {
    const published = 3_000;
    const adds = [];
    for (let n = 0; n < published; n++) adds.push(xaddEvent(redis.client, 'roomy', 'roomy', { n }));
    await Promise.all(adds);
    await redis.client.config('RESETSTAT');
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w20', blockMs: 5_000, readBatch: 50 }, [RoomyController]));
    await waitFor(() => roomyStarts.length === published, `${published} handled`, { timeout: 20_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'roomy', 'roomy')) === 0, 'every entry acked');
    expect(new Set(roomyStarts.map((s) => s.n)).size).toBe(published);
    expect(roomyStarts.every((s) => s.deliveryCount === 1)).toBe(true);
    const calls = await commandCalls(redis.client);
    const reads = calls.get('xreadgroup') ?? 0;
    const scripts = (calls.get('evalsha') ?? 0) + (calls.get('eval') ?? 0);
    // 60 full reads of 50: one take per read would be 60 script calls; doubling takes make ~10.
    expect(reads).toBeGreaterThanOrEqual(published / 50);
    expect(scripts).toBeLessThan(reads / 3);
    // What the last takes left went back with the short read: the bucket lacks only the entries started.
    expect(Math.floor(Number(await redis.client.hget(rateLimitKey('roomy', 'roomy'), 'tokens')))).toBeGreaterThanOrEqual(ROOMY_MAX - published);
  });

  it('the bucket lives on Redis\' clock and expires when idle', async () => {
    running.push(await start('w4'));
    await xaddEvent(redis.client, 'limited', 'limited', { n: 1 });
    await waitFor(() => starts.length === 1, 'handled');
    const key = rateLimitKey('limited', 'g');
    const ttl = await redis.client.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(2 * PER_MS);
  });

  it('ctx.rateLimited(ms): every worker backs off, the entry comes back after the wait', async () => {
    running.push(await start('w5'), await start('w6'));
    await xaddEvent(redis.client, 'api', 'api', { n: 0, answer429: true });
    await waitFor(() => starts.length === 1, 'the first try');
    await waitFor(async () => Number(await redis.client.hget(rateLimitKey('api', 'g'), 'until')) > 0, 'the back-off in the bucket');
    const backedOffAt = starts[0]?.at as number;
    for (let n = 1; n <= 5; n++) await xaddEvent(redis.client, 'api', 'api', { n });
    await waitFor(() => starts.length === 7, 'the 429 entry again and the five others', { timeout: 15_000 });
    // No entry of the handler started on any worker during the back-off.
    for (const later of starts.slice(1)) expect(later.at - backedOffAt).toBeGreaterThanOrEqual(700 - 20);
    const again = starts.find((s) => s.n === 0 && s.deliveryCount === 2);
    expect(again).toBeDefined();
    await waitFor(async () => (await pendingCount(redis.client, 'api', 'g')) === 0, 'every entry acked');
  });

  it('after a ctx.rateLimited() back-off the bucket starts empty: the entries that waited start at the limit\'s pace, not max at once', async () => {
    running.push(await start('w12'));
    await xaddEvent(redis.client, 'paced', 'paced', { n: 0, answer429: true });
    await waitFor(async () => Number(await redis.client.hget(rateLimitKey('paced', 'g'), 'until')) > 0, 'the back-off in the bucket');
    const backOffEnd = Number(await redis.client.hget(rateLimitKey('paced', 'g'), 'until'));
    for (let n = 1; n <= 10; n++) await xaddEvent(redis.client, 'paced', 'paced', { n });
    await waitFor(() => starts.length === 12, 'the 429 entry again and the ten others', { timeout: 15_000 });
    const after = starts.slice(1).map((s) => s.at).sort((a, b) => a - b);
    expect(after[0]).toBeGreaterThanOrEqual(backOffEnd - 20);
    // One token per 100 ms from an empty bucket: 11 entries span about 1 s (a full bucket: ~0).
    expect((after[after.length - 1] as number) - (after[0] as number)).toBeGreaterThanOrEqual(1_000 - 300);
    await waitFor(async () => (await pendingCount(redis.client, 'paced', 'g')) === 0, 'every entry acked');
  });

  it('a per-key limit: a busy tenant waits, held in Redis without a delivery counted; another tenant is not held up', async () => {
    running.push(await start('w8'), await start('w9'));
    for (let n = 0; n < 6; n++) await xaddEvent(redis.client, 'tenants', 'tenants', { n, tenant: 'acme' });
    for (let n = 0; n < 2; n++) await xaddEvent(redis.client, 'tenants', 'tenants', { n: 100 + n, tenant: 'globex' });
    await waitFor(() => tenantStarts.length === 8, 'every entry of both tenants', { timeout: 20_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'tenants', 'g')) === 0, 'every entry acked');
    const acme = tenantStarts.filter((s) => s.tenant === 'acme').map((s) => s.at).sort((a, b) => a - b);
    const globex = tenantStarts.filter((s) => s.tenant === 'globex').map((s) => s.at);
    // 2 at once, then one every 500 ms: the sixth no sooner than 2 s after the first, and in any
    // stretch t at most 2 + 2 × t / 1 s.
    expect((acme[5] as number) - (acme[0] as number)).toBeGreaterThanOrEqual(2_000 - STAMP_SLACK_MS);
    for (let i = 0; i < acme.length; i++) {
      for (let j = i; j < acme.length; j++) expect(j - i + 1).toBeLessThanOrEqual(2 + Math.floor((2 * ((acme[j] as number) - (acme[i] as number) + STAMP_SLACK_MS)) / 1_000));
    }
    // The other tenant's entries did not wait behind acme's.
    expect(Math.max(...globex) - (acme[0] as number)).toBeLessThan(1_000);
    // Held entries came back with the count they had: the holds were no deliveries.
    expect(tenantStarts.map((s) => s.deliveryCount)).toEqual(tenantStarts.map(() => 1));
    // One bucket per key, each expiring once idle for two periods: memory follows the keys in use.
    const acmeTtl = await redis.client.pttl(`${rateLimitKey('tenants', 'g')}:acme`);
    expect(acmeTtl).toBeGreaterThan(0);
    expect(acmeTtl).toBeLessThanOrEqual(2_000);
  });

  it('a per-key limit leaves the reader alone: its stream is read with a blocking XREADGROUP, no XREAD BLOCK nor grant round trip', async () => {
    await redis.client.config('RESETSTAT');
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w11', blockMs: 5_000 }, [TenantsOnlyController]));
    await waitFor(async () => (await blockedIn(redis.client, 'xreadgroup')).length === 1, 'the reader blocked in XREADGROUP');
    expect(await blockedIn(redis.client, 'xread')).toEqual([]);
    // Each entry wakes the blocked read and is handled at once (not after blockMs).
    for (let n = 0; n < 2; n++) {
      await xaddEvent(redis.client, 'tenants-only', 'tenants-only', { n, tenant: 'acme' });
      await waitFor(() => tenantStarts.length === n + 1, `entry ${n} handled`, { timeout: 2_000 });
    }
    expect(String(await redis.client.info('commandstats'))).not.toContain('cmdstat_xread:');
    await waitFor(async () => (await pendingCount(redis.client, 'tenants-only', 'tenants')) === 0, 'every entry acked');
  });

  it('a per-key limit on a server with recovery: false: a held entry waits in its worker (nothing would claim it from the retry consumer) and runs there', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w11', blockMs: 200, recovery: false }, [LimitedController]));
    for (let n = 0; n < 3; n++) await xaddEvent(redis.client, 'tenants', 'tenants', { n, tenant: 'initech' });
    await waitFor(() => tenantStarts.length === 3, 'the held entry, run by its worker once its key has a token', { timeout: 5_000 });
    await waitFor(async () => (await pendingCount(redis.client, 'tenants', 'g')) === 0, 'every entry acked');
    expect(tenantStarts.map((s) => s.deliveryCount)).toEqual([1, 1, 1]);
  });

  it('close() with an entry held in its worker (extras.recovery: false) for its key\'s token: returns at once, the entry not started, handed back pending', async () => {
    const worker = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w12', blockMs: 200, shutdownTimeout: 10_000, handoffConsumer: 'handoff' }, [LimitedController]);
    running.push(worker);
    await xaddEvent(redis.client, 'alone-tenants', 'alone-tenants', { n: 0, tenant: 'hooli' });
    const held = await xaddEvent(redis.client, 'alone-tenants', 'alone-tenants', { n: 1, tenant: 'hooli' });
    await waitFor(() => tenantStarts.length === 1, 'the entry with a token');
    // The first acked, the second delivered and waiting here (its key's next token is 4 s away).
    await waitFor(async () => (await pendingCount(redis.client, 'alone-tenants', 'g')) === 1, 'only the held entry pending');
    const closeStarted = Date.now();
    await worker.app.close();
    running.length = 0;
    // Not shutdownTimeout (10 s), nor the 4 s until the token: nothing ran.
    expect(Date.now() - closeStarted).toBeLessThan(2_000);
    expect(tenantStarts.map((s) => s.n)).toEqual([0]);
    expect(await pendingRows(redis.client, 'alone-tenants', 'g')).toEqual([expect.objectContaining({ id: held, consumer: 'handoff', deliveries: 1 })]);
  });

  it('entries claimed by recovery take tokens too: a dead consumer\'s entries start within the limit', async () => {
    await redis.client.flushall();
    await redis.client.xgroup('CREATE', 'limited', 'g', '$', 'MKSTREAM');
    for (let n = 0; n < 30; n++) await xaddEvent(redis.client, 'limited', 'limited', { n });
    await redis.client.xreadgroup('GROUP', 'g', 'ghost', 'COUNT', 30, 'STREAMS', 'limited', '>');
    running.push(
      await startServer(
        { connection: redis.server.url, group: 'g', consumer: 'w10', blockMs: 200, recovery: { minIdleTime: 100, interval: 50 } },
        [LimitedController],
      ),
    );
    await waitFor(() => starts.length === 30, 'the 30 claimed entries', { timeout: 20_000 });
    expect(starts.every((s) => s.deliveryCount === 2)).toBe(true);
    const times = starts.map((s) => s.at).sort((a, b) => a - b);
    for (let i = 0; i < times.length; i++) {
      for (let j = i; j < times.length; j++) expect(j - i + 1).toBeLessThanOrEqual(MAX + Math.floor((MAX * ((times[j] as number) - (times[i] as number) + STAMP_SLACK_MS)) / PER_MS));
    }
  });

  it('ctx.rateLimited() on a handler without rateLimit throws an error naming the option', async () => {
    running.push(await start('w7'));
    await xaddEvent(redis.client, 'unlimited', 'unlimited', {});
    await waitFor(() => limitedErrors.length === 1, 'the error');
    expect(limitedErrors[0]).toBeInstanceOf(RedisStreamsOptionError);
    expect(String((limitedErrors[0] as Error).message)).toContain('extras.rateLimit (handler "unlimited")');
  });
});
