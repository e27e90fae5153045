import { Inject, Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClientModule } from '../../src/client/redis-streams-client.module.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import { occurrencesAfter } from '../../src/delayed/cron-rule.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { listRecurring } from '../../src/delayed/delayed-inspection.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { partitionIndexOf, partitionStreamKey } from '../../src/partitions/partition-keys.js';
import { redisNow } from '../../src/redis/server-time.js';
import { hourHalfADayAfter } from '../helpers/cron-far-from-now.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const JOBS = Symbol('JOBS');

@Injectable()
class Jobs {
  constructor(readonly scheduler: RedisStreamsScheduler) {}
}

describe('RedisStreamsScheduler: recurring emits scheduled, listed and removed in code', () => {
  const redis = useRedisServer();
  const modules: TestingModule[] = [];
  const compile = async (imports: unknown[], providers: unknown[] = []) => {
    const moduleRef = await Test.createTestingModule({ imports: imports as never[], providers: providers as never[] }).compile();
    modules.push(moduleRef);
    await moduleRef.init();
    return moduleRef;
  };
  const serverMs = () => redisNow(redis.client);
  afterEach(async () => {
    await Promise.all(modules.splice(0).map((m) => m.close()));
  });

  it('registerClient({ scheduler: true }) provides it; every partition of the pattern is listed, an entry is found and removed where its key put it', async () => {
    const moduleRef = await compile(
      [RedisStreamsClientModule.register({ name: JOBS, connection: redis.server.url, partitions: { jobs: 4 }, scheduler: true })],
      [Jobs],
    );
    const { scheduler } = moduleRef.get(Jobs);
    expect(scheduler).toBeInstanceOf(RedisStreamsScheduler);
    expect(await scheduler.schedule('jobs', { report: 'hourly' }, { every: 'PT1H', key: 'hourly' })).toBe('repeat:hourly');
    // About half a day from now: no run falls between the schedule and the clock read its next run is checked against.
    const nightlyRule = { expression: `0 ${hourHalfADayAfter(await serverMs(), 'Europe/Berlin')} * * *`, timezone: 'Europe/Berlin' };
    expect(await scheduler.schedule('jobs', { report: 'nightly' }, { cron: nightlyRule.expression, timezone: nightlyRule.timezone, key: 'nightly' })).toBe('repeat:nightly');
    // partitionKey puts the hold on another partition than repeat:<key> would: list and remove still find it.
    const pinned = partitionStreamKey('jobs', (partitionIndexOf('repeat:pinned', 4) + 1) % 4);
    const partitionKey = Array.from({ length: 100 }, (_, i) => `k${i}`).find((k) => partitionStreamKey('jobs', partitionIndexOf(k, 4)) === pinned) as string;
    await scheduler.schedule('jobs', { report: 'pinned' }, { every: 60_000, key: 'pinned' }, { partitionKey, headers: { team: 'ops' } });

    const now = await serverMs();
    const listed = await scheduler.list('jobs');
    expect(Object.fromEntries(listed.map((e) => [e.key, e.stream]))).toEqual({
      pinned,
      hourly: partitionStreamKey('jobs', partitionIndexOf('repeat:hourly', 4)),
      nightly: partitionStreamKey('jobs', partitionIndexOf('repeat:nightly', 4)),
    });
    // Soonest first.
    expect(listed.map((e) => e.key)).toEqual(['pinned', 'hourly', 'nightly']);
    expect(listed.map((e) => e.nextAt)).toEqual(listed.map((e) => e.nextAt).sort());
    const byKey = (key: string) => listed.find((e) => e.key === key);
    const [first, hourly, nightly] = [byKey('pinned'), byKey('hourly'), byKey('nightly')];
    expect(first).toMatchObject({ pattern: 'jobs', every: 60_000, cron: null, data: { report: 'pinned' } });
    expect(first?.fields).toContainEqual(['headers', JSON.stringify({ team: 'ops' })]);
    expect(hourly).toMatchObject({ every: 3_600_000, cron: null, data: { report: 'hourly' } });
    expect(Date.parse(hourly!.nextAt) - now).toBeGreaterThan(3_590_000);
    const [nextNightly] = occurrencesAfter(nightlyRule, now, 1);
    expect(nightly).toMatchObject({ every: null, nextAt: new Date(nextNightly as number).toISOString(), cron: nightlyRule });

    // Scheduling a key again (the next start-up) replaces the payload and keeps the schedule.
    await scheduler.schedule('jobs', { report: 'hourly', v: 2 }, { every: 'PT1H', key: 'hourly' });
    const again = await scheduler.get('jobs', 'hourly');
    expect(again).toMatchObject({ nextAt: hourly!.nextAt, data: { report: 'hourly', v: 2 } });
    expect(await scheduler.list('jobs')).toHaveLength(3);

    // What the promotion adds lands on the stream the list named.
    await redis.client.zadd(delayedKeys(pinned).schedule, 'XX', 0, 'repeat:pinned');
    expect((await promoteDue(redis.client, pinned)).promoted).toHaveLength(1);
    const [[, fields]] = (await redis.client.xrange(pinned, '-', '+')) as [string, string[]][];
    expect(fields).toEqual(expect.arrayContaining(['pattern', 'jobs', 'data', JSON.stringify({ report: 'pinned' })]));

    expect(await scheduler.remove('jobs', 'pinned')).toBe(true);
    expect(await scheduler.remove('jobs', 'pinned')).toBe(false);
    expect(await redis.client.zscore(delayedKeys(pinned).schedule, 'repeat:pinned')).toBeNull();
    expect(await redis.client.hexists(delayedKeys(pinned).bodies, 'repeat:pinned')).toBe(0);
    expect(await scheduler.get('jobs', 'pinned')).toBeUndefined();
    expect((await scheduler.list('jobs')).map((e) => e.key).sort()).toEqual(['hourly', 'nightly']);
  });

  it('registerClientAsync with a token of its own; on an unpartitioned pattern, with a stream prefix, by hand', async () => {
    const SCHEDULER = 'REPORTS_SCHEDULER';
    @Injectable()
    class Reports {
      constructor(@Inject(SCHEDULER) readonly scheduler: RedisStreamsScheduler) {}
    }
    @Module({ providers: [{ provide: 'URL', useValue: redis.server.url }], exports: ['URL'] })
    class ConfigModule {}
    const moduleRef = await compile(
      [
        RedisStreamsClientModule.registerAsync({
          name: 'REPORTS',
          imports: [ConfigModule],
          inject: ['URL'],
          useFactory: (url: string) => ({ connection: url, streamPrefix: 'svc:' }),
          scheduler: SCHEDULER,
        }),
      ],
      [Reports],
    );
    const { scheduler } = moduleRef.get(Reports);
    await scheduler.schedule('reports', { n: 1 }, { every: 1_000, key: 'tick' });
    expect((await scheduler.list('reports')).map((e) => [e.key, e.stream])).toEqual([['tick', 'svc:reports']]);
    expect(await redis.client.zscore(delayedKeys('svc:reports').schedule, 'repeat:tick')).not.toBeNull();
    expect(await scheduler.list('other')).toEqual([]);

    const byHand = new RedisStreamsScheduler(moduleRef.get<RedisStreamsClient>('REPORTS'));
    expect(await byHand.remove('reports', 'tick')).toBe(true);
    expect(await scheduler.list('reports')).toEqual([]);
  });

  it('entries due at the same ms are listed by hold id in byte order (Redis’ order, the dashboard’s), whatever the host’s locale', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url, partitions: { ties: 2 } });
    try {
      const scheduler = new RedisStreamsScheduler(client);
      const rule = { cron: `0 ${hourHalfADayAfter(await serverMs(), 'UTC')} * * *`, timezone: 'UTC' };
      // A locale's collation puts a before B (and in Danish aa after z); bytes put B first.
      for (const key of ['z', 'aa', 'a', 'B']) await scheduler.schedule('ties', { key }, { ...rule, key });
      const listed = await scheduler.list('ties');
      expect(new Set(listed.map((entry) => entry.nextAt)).size).toBe(1);
      expect(listed.map((entry) => entry.key)).toEqual(['B', 'a', 'aa', 'z']);
      // Each partition's own list, as its schedule holds them.
      for (const stream of [partitionStreamKey('ties', 0), partitionStreamKey('ties', 1)]) {
        expect((await listRecurring(redis.client, stream)).map((entry) => entry.hold)).toEqual(await redis.client.zrange(delayedKeys(stream).schedule, 0, -1));
      }
    } finally {
      await client.close();
    }
  });

  it('refuses bad input by name: the scheduler option, two schedulers under one token, pattern, key, options schedule() does not take', async () => {
    const url = redis.server.url;
    const refused = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(refused(() => RedisStreamsClientModule.register({ name: 'A', connection: url, scheduler: 5 as never }))).toMatchObject({
      constructor: RedisStreamsOptionError,
      message: expect.stringContaining('scheduler'),
    });
    const twice = refused(() => RedisStreamsClientModule.register({ name: 'A', connection: url, scheduler: true }, { name: 'B', connection: url, scheduler: true })) as Error;
    expect(twice).toBeInstanceOf(RedisStreamsOptionError);
    expect(twice.message).toMatch(/scheduler.*RedisStreamsScheduler.*twice/);

    const client = new RedisStreamsClient({ connection: url });
    try {
      const scheduler = new RedisStreamsScheduler(client);
      await expect(scheduler.schedule('', {}, { every: 1_000, key: 'k' })).rejects.toThrow(/pattern/);
      await expect(scheduler.schedule('p', {}, { every: 1_000, key: '' })).rejects.toThrow(/repeat\.key/);
      await expect(scheduler.schedule('p', {}, { every: 1, key: 'k' })).rejects.toThrow(/repeat\.every.*at least 10 ms/);
      await expect(scheduler.schedule('p', {}, { every: 1_000, key: 'k' }, { timeout: 5 } as never)).rejects.toThrow(/timeout.*does not apply/);
      await expect(scheduler.schedule('p', {}, { every: 1_000, key: 'k' }, { repeat: { every: 1_000, key: 'x' } } as never)).rejects.toThrow(/repeat.*third argument/);
      await expect(scheduler.get('p', '')).rejects.toBeInstanceOf(RedisStreamsOptionError);
      await expect(scheduler.remove('p', 7 as never)).rejects.toThrow(/key.*must be a non-empty string/);
      expect(await redis.client.exists(delayedKeys('p').schedule)).toBe(0);
    } finally {
      await client.close();
    }
  });
});
