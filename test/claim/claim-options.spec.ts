import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { resolveClaimOptions } from '../../src/claim/claim-options.js';
import { StreamClaimService } from '../../src/module/claim-services.js';
import type { ClaimOptions } from '../../src/claim/claim.types.js';
import { freePort } from '../helpers/redis-server.js';

const base: ClaimOptions = { key: 'orders', group: 'billing', consumer: 'recovery', minIdleTime: 'PT10M' };

/**
 * No server here: the client points at a closed port and connects lazily, so any command would
 * change its status from "wait". Every rejection must come before that.
 */
describe('claim options: validated before any command', () => {
  let redis: Redis;
  let service: StreamClaimService;

  beforeAll(async () => {
    redis = new Redis({ port: await freePort(), lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    redis.on('error', () => undefined);
    service = new StreamClaimService(redis);
  });
  afterAll(() => {
    redis.disconnect();
  });

  async function rejects(overrides: Record<string, unknown>, option: string): Promise<void> {
    const error = await service.claim({ ...base, ...overrides } as ClaimOptions).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect((error as RedisStreamsOptionError).option).toBe(option);
    expect((error as Error).message).toContain(`"${option}"`);
    expect(redis.status).toBe('wait');
  }

  it('applies the defaults: count 100, maxRecords 100, maxPages 10, startId 0-0, fetchType FETCH', () => {
    expect(resolveClaimOptions(base)).toEqual({
      key: 'orders',
      group: 'billing',
      consumer: 'recovery',
      minIdleMs: 600_000,
      count: 100,
      maxRecords: 100,
      maxPages: 10,
      startId: '0-0',
      fetchType: 'FETCH',
      fieldsFormat: 'object',
      encoding: 'utf8',
    });
  });

  const ranges: [option: string, min: number, max: number][] = [
    ['count', 1, 10_000],
    ['maxRecords', 1, 10_000],
    ['maxPages', 1, 1_000],
  ];
  for (const [option, min, max] of ranges) {
    it(`${option}: ${min} and ${max} are valid, ${min - 1} and ${max + 1} are rejected`, async () => {
      expect((resolveClaimOptions({ ...base, [option]: min }) as unknown as Record<string, number>)[option]).toBe(min);
      expect((resolveClaimOptions({ ...base, [option]: max }) as unknown as Record<string, number>)[option]).toBe(max);
      await rejects({ [option]: min - 1 }, option);
      await rejects({ [option]: max + 1 }, option);
      await rejects({ [option]: 1.5 }, option);
      await rejects({ [option]: '10' }, option);
    });
  }

  it('minIdleTime is required and strictly positive after truncation to whole milliseconds', async () => {
    await rejects({ minIdleTime: undefined }, 'minIdleTime');
    await rejects({ minIdleTime: 0 }, 'minIdleTime');
    await rejects({ minIdleTime: -1 }, 'minIdleTime');
    await rejects({ minIdleTime: 0.9 }, 'minIdleTime');
    await rejects({ minIdleTime: 'PT0S' }, 'minIdleTime');
    await rejects({ minIdleTime: 'PT0.0004S' }, 'minIdleTime');
    await rejects({ minIdleTime: 'P1M' }, 'minIdleTime');
    await rejects({ minIdleTime: 'soon' }, 'minIdleTime');
    expect(resolveClaimOptions({ ...base, minIdleTime: 1 }).minIdleMs).toBe(1);
    expect(resolveClaimOptions({ ...base, minIdleTime: 'PT0.001S' }).minIdleMs).toBe(1);
  });

  it('startId must be 0-0 or a stream id', async () => {
    expect(resolveClaimOptions({ ...base, startId: '0-0' }).startId).toBe('0-0');
    expect(resolveClaimOptions({ ...base, startId: '1700000000000-5' }).startId).toBe('1700000000000-5');
    expect(resolveClaimOptions({ ...base, startId: '18446744073709551615-18446744073709551615' }).startId).toBe(
      '18446744073709551615-18446744073709551615',
    );
    for (const startId of ['0', '$', '>', '-', '1700000000000', 'abc', '', '18446744073709551616-0']) {
      await rejects({ startId }, 'startId');
    }
  });

  it('key, group and consumer must be non-empty strings', async () => {
    for (const option of ['key', 'group', 'consumer']) {
      await rejects({ [option]: '' }, option);
      await rejects({ [option]: undefined }, option);
      await rejects({ [option]: 42 }, option);
    }
  });

  it('an unknown fetchType is named; FETCH_ONE forces count and maxRecords to 1', async () => {
    await rejects({ fetchType: 'fetch' }, 'fetchType');
    await rejects({ fetchType: 'ALL' }, 'fetchType');
    const one = resolveClaimOptions({ ...base, fetchType: 'FETCH_ONE', count: 500, maxRecords: 500 });
    expect([one.count, one.maxRecords]).toEqual([1, 1]);
    for (const fetchType of ['FETCH', 'STORE', 'NONE'] as const) {
      expect(resolveClaimOptions({ ...base, fetchType }).fetchType).toBe(fetchType);
    }
  });

  it('ack validates key, group and every id before sending', async () => {
    const ack = (key: string, group: string, ids: string[]) => service.ack(key, group, ids).catch((e: unknown) => e);
    expect(await ack('', 'g', ['1-0'])).toMatchObject({ option: 'key' });
    expect(await ack('s', '', ['1-0'])).toMatchObject({ option: 'group' });
    const bad = await ack('s', 'g', ['1-0', 'nope']);
    expect(bad).toBeInstanceOf(RedisStreamsOptionError);
    expect((bad as Error).message).toContain('ids[1]');
    expect(await service.ack('s', 'g', [])).toBe(0);
    expect(redis.status).toBe('wait');
  });
});
