import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsCapabilityError, RedisStreamsOptionError } from '../../src/errors.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep } from '../helpers/wait.js';

type Entry = [id: string, fields: string[]];

/** How often each `key` of the entries' data appears in the stream. */
async function keyCounts(redis: { xrange: (key: string, start: string, end: string) => Promise<unknown> }, stream: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const [, fields] of (await redis.xrange(stream, '-', '+')) as Entry[]) {
    const key = (JSON.parse(fields[fields.indexOf('data') + 1]!) as { key: string }).key;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

describe('retry-safe emits: idempotencyKey, IDMPAUTO and retries (Redis 8.6+)', () => {
  const redis = useRedisServer();
  const clients: RedisStreamsClient[] = [];
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0]) => {
    const created = new RedisStreamsClient({ connection: redis.server.url, ...options });
    clients.push(created);
    return created;
  };
  afterEach(async () => {
    redis.server.resume();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await redis.client.flushall();
  });

  it('rejects bad idempotence options by name', () => {
    expect(() => client({ idempotence: { producerId: '' } })).toThrow(RedisStreamsOptionError);
    expect(() => client({ idempotence: { retries: -1 } })).toThrow(/"idempotence\.retries"/);
    expect(() => client({ idempotence: { retry: 3 } as never })).toThrow(/"idempotence\.retry": is not an idempotence option/);
  });

  it('a 3 s SIGSTOP during 300 keyed emits with retries: every emit resolves and every key is in the stream exactly once', async () => {
    const { idmp } = await capabilitiesOf(redis.client);
    const producer = client({ commandTimeout: 400, idempotence: { producerId: 'billing-1', retries: 30, retryDelay: 200 } });
    if (!idmp) {
      const failure = await producer.connect().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(RedisStreamsCapabilityError);
      expect(failure).toMatchObject({ option: 'idempotence', capability: 'idmp', since: '8.6' });
      return;
    }
    await producer.connect();
    // Redis tracks IDMP-MAXSIZE keys per producer (100 by default): more emits than that in flight
    // while Redis is stopped would evict keys whose retries are still to come. Sized for this run,
    // before it (an XCFGSET that changes a value clears the stream's IDMP history).
    await redis.client.xadd('orders', '*', 'data', JSON.stringify({ key: 'setup' }));
    await redis.client.call('XCFGSET', 'orders', 'IDMP-MAXSIZE', 1000);
    await redis.client.xtrim('orders', 'MAXLEN', 0);
    const emit = (n: number) => lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ key: `k-${n}` }, { idempotencyKey: `k-${n}` })));
    const emits: Promise<unknown>[] = [];
    for (let n = 0; n < 100; n++) emits.push(emit(n));
    await Promise.all(emits);
    // 100 emits waiting for their retry at once is normal here, not a listener leak to warn of.
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    redis.server.pause();
    for (let n = 100; n < 200; n++) emits.push(emit(n)); // time out, are sent again, and again …
    await sleep(3_000);
    redis.server.resume();
    for (let n = 200; n < 300; n++) emits.push(emit(n));
    const ids = await Promise.all(emits);
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).toEqual([]);
    expect(new Set(ids).size).toBe(300);
    const counts = await keyCounts(redis.client, 'orders');
    expect(counts.size).toBe(300);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    expect(await redis.client.xlen('orders')).toBe(300);
    // Redis answered the repeats from its table: some emits were sent more than once.
    const info = (await redis.client.call('XINFO', 'STREAM', 'orders')) as unknown[];
    expect(Number(info[info.indexOf('iids-duplicates') + 1])).toBeGreaterThan(0);
  }, 30_000);

  it('IDMPAUTO (no key given): emits retried through a SIGSTOP are written once each', async () => {
    const { idmp } = await capabilitiesOf(redis.client);
    if (!idmp) return; // the named error is asserted above on every server
    const producer = client({ commandTimeout: 300, idempotence: { retries: 30, retryDelay: 100 } });
    await producer.connect();
    redis.server.pause();
    // Not warmed: the pattern's partition check (a GET) times out too and is retried like the XADDs.
    const emits = Array.from({ length: 50 }, (_, n) => lastValueFrom(producer.emit('auto', { key: `a-${n}` })));
    await sleep(1_500);
    redis.server.resume();
    await Promise.all(emits);
    const counts = await keyCounts(redis.client, 'auto');
    expect(counts.size).toBe(50);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
  }, 30_000);

  it('a per-call idempotencyKey dedupes on 8.6+, and fails that emit by name without IDMP (nothing written)', async () => {
    const { idmp } = await capabilitiesOf(redis.client);
    const producer = client({});
    const emit = () => lastValueFrom(producer.emit('once', new RedisStreamsRecord({ key: 'o-1' }, { idempotencyKey: 'o-1' })));
    if (!idmp) {
      const failure = await emit().catch((error: unknown) => error);
      expect((failure as Error).cause).toBeInstanceOf(RedisStreamsCapabilityError);
      expect((failure as Error).cause).toMatchObject({ option: 'idempotencyKey', capability: 'idmp' });
      expect(await redis.client.exists('once')).toBe(0);
      return;
    }
    const [first, second] = [await emit(), await emit()];
    expect(second).toBe(first);
    expect(await redis.client.xlen('once')).toBe(1);
  });

  it('without idempotence an emit that timed out is not retried (and Redis may still write it once)', async () => {
    const producer = client({ commandTimeout: 300 });
    // Warmed: the pattern's first emit checks its partition metadata (a GET) before its XADD.
    await lastValueFrom(producer.emit('plain', { key: 'p-0' }));
    redis.server.pause();
    const failure = await lastValueFrom(producer.emit('plain', { key: 'p-1' })).catch((error: unknown) => error);
    redis.server.resume();
    expect((failure as Error).message).toMatch(/Redis did not answer within commandTimeout/);
    await sleep(300);
    expect(await redis.client.xlen('plain')).toBe(2);
  });
});
