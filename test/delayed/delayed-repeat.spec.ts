import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { removeDelayed } from '../../src/delayed/delayed-inspection.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { redisNow } from '../../src/redis/server-time.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { raceToPromote } from '../helpers/racing-promoters.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Entry = [id: string, fields: string[]];
const ticks: unknown[] = [];

@Controller()
class TickController {
  @EventPattern<string>('ticks')
  onTick(@Payload() data: unknown): void {
    ticks.push(data);
  }
}

describe('recurring emits (RedisStreamsRecord repeat: { every, key })', () => {
  const redis = useRedisServer();
  const clients: RedisStreamsClient[] = [];
  const running: RunningServer[] = [];
  const client = () => {
    const created = new RedisStreamsClient({ connection: redis.server.url });
    clients.push(created);
    return created;
  };
  const serverMs = () => redisNow(redis.client);
  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    ticks.length = 0;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  it('registered under its key: emitting it again keeps one schedule and takes the new body', async () => {
    const c = client();
    const before = await serverMs();
    const hold = await lastValueFrom(c.emit('reg', new RedisStreamsRecord({ v: 1 }, { repeat: { every: 'PT1M', key: 'nightly' } })));
    expect(hold).toBe('repeat:nightly');
    const { schedule, bodies } = delayedKeys('reg');
    const due = Number(await redis.client.zscore(schedule, 'repeat:nightly'));
    expect(due).toBeGreaterThanOrEqual(before + 60_000); // first occurrence: one period from now
    expect(await lastValueFrom(c.emit('reg', new RedisStreamsRecord({ v: 2 }, { repeat: { every: 'PT1M', key: 'nightly' } })))).toBe('repeat:nightly');
    expect([await redis.client.zcard(schedule), Number(await redis.client.zscore(schedule, 'repeat:nightly'))]).toEqual([1, due]);
    expect(await redis.client.hget(bodies, 'repeat:nightly')).toContain('{"v":2}');
  });

  it('on a partitioned pattern, registering it again lands on the same partition: one schedule, not one per partition', async () => {
    const c = new RedisStreamsClient({ connection: redis.server.url, partitions: { parted: 4 } });
    clients.push(c);
    for (let i = 0; i < 8; i++) await lastValueFrom(c.emit('parted', new RedisStreamsRecord({ i }, { repeat: { every: 'PT1M', key: 'one' } })));
    const held = await Promise.all([0, 1, 2, 3].map((p) => redis.client.zcard(delayedKeys(`parted:p${p}`).schedule)));
    expect(held.reduce((sum, n) => sum + n, 0)).toBe(1);
  });

  it('each promotion adds one entry and schedules the next occurrence; missed ones are not caught up', async () => {
    const c = client();
    const now = await serverMs();
    await lastValueFrom(c.emit('missed', new RedisStreamsRecord({ v: 1 }, { repeat: { every: 1_000, key: 'k' }, deliverAt: now - 10_500 })));
    const result = await promoteDue(redis.client, 'missed');
    expect(result.promoted.map((row) => row.hold)).toEqual(['repeat:k']);
    expect(await redis.client.xlen('missed')).toBe(1);
    const next = Number(await redis.client.zscore(delayedKeys('missed').schedule, 'repeat:k'));
    // On the grid of the first occurrence, the first point after the promotion.
    expect((next - (now - 10_500)) % 1_000).toBe(0);
    expect(next).toBeGreaterThan(result.nowMs);
    expect(next).toBeLessThanOrEqual(result.nowMs + 1_000);
    expect(await redis.client.hexists(delayedKeys('missed').bodies, 'repeat:k')).toBe(1);
  });

  it('a worker adds it every period; removing the hold stops it', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w', delayed: { interval: 50 } }, [TickController]));
    const c = client();
    await lastValueFrom(c.emit('ticks', new RedisStreamsRecord({ tick: true }, { repeat: { every: 100, key: 'tick' } })));
    await waitFor(() => ticks.length >= 3, 'three occurrences handled', { timeout: 15_000 });
    expect(ticks.every((tick) => JSON.stringify(tick) === '{"tick":true}')).toBe(true);
    expect(await removeDelayed(redis.client, 'ticks', ['repeat:tick'])).toMatchObject({ removed: 1 });
    const { schedule, bodies } = delayedKeys('ticks');
    expect(await redis.client.exists(schedule, bodies)).toBe(0);
    expect((await promoteDue(redis.client, 'ticks')).promoted).toEqual([]);
  });

  it('50 connections promoting one recurring entry for a second: one entry per occurrence, not one per promoter', async () => {
    const c = client();
    const every = 100;
    const start = await serverMs();
    await lastValueFrom(c.emit('raced', new RedisStreamsRecord({ r: 1 }, { repeat: { every, key: 'r' }, deliverAt: start, trim: false })));
    const end = await raceToPromote(redis.server, 'raced', 50, start, 1_000);
    const entries = (await redis.client.xrange('raced', '-', '+')) as Entry[];
    // Occurrences due in [start, end]: at most one entry each.
    expect(entries.length).toBeGreaterThanOrEqual(2);
    expect(entries.length).toBeLessThanOrEqual(Math.floor((end - start) / every) + 1);
  });

  it('rejects a bad repeat, naming the option; send() refuses it', async () => {
    const c = client();
    const cases: [unknown, string][] = [
      [{ every: 5, key: 'k' }, 'repeat.every'],
      [{ every: 'soon', key: 'k' }, 'repeat.every'],
      [{ every: 100, key: '' }, 'repeat.key'],
      [{ every: 100 }, 'repeat.key'],
      [{ every: 100, key: 'k', cron: '* * * * *' }, 'repeat.cron'],
      ['PT1M', 'repeat'],
    ];
    for (const [repeat, option] of cases) {
      const error = await lastValueFrom(c.emit('bad', new RedisStreamsRecord(1, { repeat } as never))).then(() => undefined, (failure: unknown) => failure);
      expect(error).toBeInstanceOf(RedisStreamsOptionError);
      expect((error as RedisStreamsOptionError).option).toBe(option);
    }
    const sent = await lastValueFrom(c.send('bad', new RedisStreamsRecord(1, { repeat: { every: 100, key: 'k' } }))).then(() => undefined, (failure: unknown) => failure);
    expect((sent as RedisStreamsOptionError).option).toBe('repeat');
    expect(await redis.client.exists('bad', ...Object.values(delayedKeys('bad')))).toBe(0);
  });
});
