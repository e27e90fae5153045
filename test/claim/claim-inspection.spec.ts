import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClaimError, translateRedisError } from '../../src/claim/claim.errors.js';
import { StreamInspectionService } from '../../src/module/claim-services.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { addEntries, createGroup, makeIdle } from '../helpers/claim-fixtures.js';

describe('StreamInspectionService against redis-server', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  let inspection: StreamInspectionService;
  let ids: string[];

  beforeAll(async () => {
    server = await RedisServerProcess.start();
    redis = server.client();
    inspection = new StreamInspectionService(redis);
    await createGroup(redis, 'orders', 'billing');
    await createGroup(redis, 'orders', 'audit');
    ids = await addEntries(redis, 'orders', 6);
    await redis.xreadgroup('GROUP', 'billing', 'w1', 'COUNT', 4, 'STREAMS', 'orders', '>');
    await redis.xreadgroup('GROUP', 'billing', 'w2', 'COUNT', 10, 'STREAMS', 'orders', '>'); // the remaining 2
    await makeIdle(redis, 'orders', 'billing', 'w1', ids.slice(0, 2));
    await redis.xack('orders', 'billing', ids[3]!);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('pendingSummary: count, id range, per-consumer counts', async () => {
    expect(await inspection.pendingSummary('orders', 'billing')).toEqual({
      key: 'orders',
      group: 'billing',
      count: 5,
      smallest: ids[0],
      largest: ids[5],
      consumers: [
        { name: 'w1', pending: 3 },
        { name: 'w2', pending: 2 },
      ],
    });
    expect(await inspection.pendingSummary('orders', 'audit')).toEqual({
      key: 'orders',
      group: 'audit',
      count: 0,
      smallest: null,
      largest: null,
      consumers: [],
    });
  });

  it('pendingRange: ids, owners, idle times and delivery counts, with filters', async () => {
    const all = await inspection.pendingRange('orders', 'billing');
    expect(all.map((e) => [e.id, e.consumer, e.deliveryCount])).toEqual([
      [ids[0], 'w1', 1],
      [ids[1], 'w1', 1],
      [ids[2], 'w1', 1],
      [ids[4], 'w2', 1],
      [ids[5], 'w2', 1],
    ]);
    expect(all[0]!.idleMs).toBeGreaterThanOrEqual(3_600_000);
    const idle = await inspection.pendingRange('orders', 'billing', { minIdleTime: 'PT10M' });
    expect(idle.map((e) => e.id)).toEqual(ids.slice(0, 2));
    const w2 = await inspection.pendingRange('orders', 'billing', { consumer: 'w2', count: 1 });
    expect(w2.map((e) => e.id)).toEqual([ids[4]]);
    const after = await inspection.pendingRange('orders', 'billing', { start: `(${ids[2]}`, end: ids[4] });
    expect(after.map((e) => e.id)).toEqual([ids[4]]);
    await expect(inspection.pendingRange('orders', 'billing', { count: 0 })).rejects.toBeInstanceOf(RedisStreamsOptionError);
    await expect(inspection.pendingRange('orders', 'billing', { start: 'x' })).rejects.toMatchObject({ option: 'start' });
  });

  it('groups: consumers, pending, last delivered id, entries read and lag', async () => {
    await addEntries(redis, 'orders', 1, 100);
    const groups = await inspection.groups('orders');
    // Redis 6.2 tracks neither (documented: null there).
    const { lagTracking } = await capabilitiesOf(redis);
    expect(groups).toEqual([
      { name: 'audit', consumers: 0, pending: 0, lastDeliveredId: '0-0', entriesRead: null, lag: lagTracking ? 7 : null },
      { name: 'billing', consumers: 2, pending: 5, lastDeliveredId: ids[5], entriesRead: lagTracking ? 6 : null, lag: lagTracking ? 1 : null },
    ]);
  });

  it('consumers: pending and idle per consumer', async () => {
    const consumers = await inspection.consumers('orders', 'billing');
    expect(consumers.map((c) => [c.name, c.pending])).toEqual([
      ['w1', 3],
      ['w2', 2],
    ]);
    // "inactive" exists from Redis 7.2 on (and in Valkey): asked of the server, not of its version string.
    const raw = (await redis.call('XINFO', 'CONSUMERS', 'orders', 'billing')) as unknown[][];
    const hasInactive = raw[0]!.map(String).includes('inactive');
    for (const consumer of consumers) {
      expect(consumer.idleMs).toBeGreaterThanOrEqual(0);
      if (hasInactive) expect(typeof consumer.inactiveMs).toBe('number');
      else expect(consumer.inactiveMs).toBeNull();
    }
  });

  it('stream: length and first/last ids', async () => {
    const info = await inspection.stream('orders');
    const { lagTracking } = await capabilitiesOf(redis);
    expect(info).toMatchObject({ key: 'orders', length: 7, firstEntryId: ids[0], groups: 2, entriesAdded: lagTracking ? 7 : null });
    expect(info.lastEntryId).toBe(info.lastGeneratedId);
    await redis.xadd('empty', '*', 'a', '1');
    await redis.xtrim('empty', 'MAXLEN', 0);
    expect(await inspection.stream('empty')).toMatchObject({ length: 0, firstEntryId: null, lastEntryId: null });
  });

  it('a missing stream or group is a RedisStreamsClaimError naming it', async () => {
    await expect(inspection.groups('missing')).rejects.toMatchObject({ reason: 'missing-stream', message: 'stream "missing" does not exist' });
    await expect(inspection.stream('missing')).rejects.toBeInstanceOf(RedisStreamsClaimError);
    await expect(inspection.consumers('orders', 'nope')).rejects.toMatchObject({ reason: 'missing-group', message: 'group "nope" does not exist on stream "orders"' });
    await expect(inspection.pendingSummary('orders', 'nope')).rejects.toMatchObject({ reason: 'missing-group' });
    await expect(inspection.pendingRange('missing', 'nope')).rejects.toMatchObject({ reason: 'missing-stream' });
  });

  it("Redis' \"no such key\" is a missing stream even when the stream was created before the error was read (top sampling during a promotion)", async () => {
    const refused = await redis.xinfo('STREAM', 'created-meanwhile').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(String(refused)).toMatch(/no such key/);
    await redis.xadd('created-meanwhile', '*', 'a', '1');
    const translated = await translateRedisError(refused, 'created-meanwhile', undefined, async () => (await redis.exists('created-meanwhile')) === 1);
    expect(translated).toMatchObject({ reason: 'missing-stream', message: 'stream "created-meanwhile" does not exist' });
  });
});
