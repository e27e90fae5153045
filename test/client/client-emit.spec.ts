import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord, RedisStreamsRecordBuilder } from '../../src/client/redis-streams-record.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { recordSocketWrites } from '../helpers/socket-writes.js';
import { sleep, waitFor } from '../helpers/wait.js';

type Entry = [id: string, fields: string[]];

describe('RedisStreamsClient.emit', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  const clients: RedisStreamsClient[] = [];
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const created = new RedisStreamsClient({ connection: server.url, ...options });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    server = await RedisServerProcess.start();
    redis = server.client();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    redis.disconnect();
    await server.stop();
  });

  it('resolves with the new entry id; the entry carries pattern, data and no headers', async () => {
    const c = client();
    const id = await lastValueFrom(c.emit('orders.created', { item: 'kettle', qty: 1 }));
    const entries = (await redis.xrange('orders.created', '-', '+')) as Entry[];
    expect(entries).toEqual([[id, ['pattern', 'orders.created', 'data', '{"item":"kettle","qty":1}']]]);
  });

  it('sends the XADD even when nobody subscribes (eager, like Nest)', async () => {
    const c = client();
    c.emit('eager', 'x');
    await waitFor(async () => (await redis.xlen('eager')) === 1, 'the unsubscribed emit to land');
  });

  it('gives every subscriber the same id and writes once', async () => {
    const c = client();
    const emitted = c.emit('shared', 1);
    const [a, b] = await Promise.all([lastValueFrom(emitted), lastValueFrom(emitted)]);
    expect(a).toBe(b);
    expect(await lastValueFrom(emitted)).toBe(a);
    expect(await redis.xlen('shared')).toBe(1);
  });

  it('normalizes object patterns like Nest and applies streamPrefix', async () => {
    const c = client({ streamPrefix: 'app:' });
    const id = await firstValueFrom(c.emit({ v: 1, cmd: 'sum' }, [1, 2]));
    const entries = (await redis.xrange('app:{"cmd":"sum","v":1}', '-', '+')) as Entry[];
    expect(entries).toEqual([[id, ['pattern', '{"cmd":"sum","v":1}', 'data', '[1,2]']]]);
  });

  it('writes a raw record exactly as given, readable by a plain XRANGE', async () => {
    const c = client();
    const id = await lastValueFrom(
      c.emit('raw-orders', new RedisStreamsRecord({ item: 'kettle', qty: 1, __proto__x: 'p' }, { raw: true })),
    );
    const entries = (await redis.xrange('raw-orders', '-', '+')) as Entry[];
    expect(entries).toEqual([[id, ['item', 'kettle', 'qty', '1', '__proto__x', 'p']]]);
  });

  it('writes headers given with a record as one JSON field', async () => {
    const c = client();
    const record = new RedisStreamsRecordBuilder({ n: 1 }).setHeaders({ tenant: 'acme', trace: 't-1' }).build();
    const id = await lastValueFrom(c.emit('with-headers', record));
    const entries = (await redis.xrange('with-headers', '-', '+')) as Entry[];
    expect(entries).toEqual([
      [id, ['pattern', 'with-headers', 'data', '{"n":1}', 'headers', '{"tenant":"acme","trace":"t-1"}']],
    ]);
  });

  it('adds the metadata of a Nest 12 dispatch hook to the headers', async () => {
    const c = client();
    const hookable = c as unknown as { setOnDispatchHook?: (hook: (p: { metadata?: Record<string, string> }) => void) => void };
    if (typeof hookable.setOnDispatchHook !== 'function') return; // Nest 11: no hook to test
    hookable.setOnDispatchHook((packet) => {
      packet.metadata = { traceparent: '00-abc-01' };
    });
    const record = new RedisStreamsRecord({ n: 2 }, { headers: { tenant: 'acme' } });
    const id = await lastValueFrom(c.emit('with-metadata', record));
    const entries = (await redis.xrange('with-metadata', '-', '+')) as Entry[];
    expect(entries).toEqual([
      [id, ['pattern', 'with-metadata', 'data', '{"n":2}', 'headers', '{"traceparent":"00-abc-01","tenant":"acme"}']],
    ]);
  });

  it('rejects a raw record with headers, and a raw record that is not a field map', async () => {
    const c = client();
    await expect(
      lastValueFrom(c.emit('raw-bad', new RedisStreamsRecord({ a: '1' }, { raw: true, headers: { h: 'x' } }))),
    ).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'headers' });
    await expect(lastValueFrom(c.emit('raw-bad', new RedisStreamsRecord('text', { raw: true })))).rejects.toMatchObject({
      name: 'RedisStreamsOptionError',
      option: 'raw',
    });
    expect(await redis.exists('raw-bad')).toBe(0);
  });

  it('keeps a stream within MAXLEN ~ N plus one node after 20×N emits', async () => {
    const n = 50;
    const c = client({ trim: { maxLen: n } });
    await Promise.all(Array.from({ length: 20 * n }, (_, i) => lastValueFrom(c.emit('capped', i))));
    const nodeSize = Number((await redis.config('GET', 'stream-node-max-entries'))[1]);
    const length = await redis.xlen('capped');
    expect(length).toBeGreaterThanOrEqual(n);
    expect(length).toBeLessThanOrEqual(n + nodeSize);
    // The newest entries survive.
    const [last] = (await redis.xrevrange('capped', '+', '-', 'COUNT', 1)) as Entry[];
    expect(last?.[1]).toEqual(['pattern', 'capped', 'data', String(20 * n - 1)]);
  });

  it('trims exactly with exact: true, per pattern, and per call', async () => {
    const c = client({ trimming: { exact: { maxLen: 7, exact: true } } });
    for (let i = 0; i < 30; i++) await lastValueFrom(c.emit('exact', i));
    expect(await redis.xlen('exact')).toBe(7);
    for (let i = 0; i < 5; i++) await lastValueFrom(c.emit('per-call', new RedisStreamsRecord(i, { trim: { maxLen: 2, exact: true } })));
    expect(await redis.xlen('per-call')).toBe(2);
  });

  it('does not trim with trim: false', async () => {
    const c = client({ trim: false });
    await Promise.all(Array.from({ length: 300 }, (_, i) => lastValueFrom(c.emit('untrimmed', i))));
    expect(await redis.xlen('untrimmed')).toBe(300);
  });

  it('drops entries older than maxAge (MINID from the server clock)', async () => {
    const c = client({ trimming: { aged: { maxAge: 300, exact: true } } });
    const old = await lastValueFrom(c.emit('aged', 'old'));
    const oldMs = Number(String(old).split('-')[0]);
    // Wait (on the server's clock) until the old entry is older than maxAge.
    await waitFor(async () => {
      const [seconds, micros] = await redis.time();
      return Number(seconds) * 1000 + Number(micros) / 1000 > oldMs + 400;
    }, 'the first entry to age past maxAge');
    const fresh = await lastValueFrom(c.emit('aged', 'fresh'));
    const ids = ((await redis.xrange('aged', '-', '+')) as Entry[]).map(([id]) => id);
    expect(ids).toEqual([fresh]);
  });

  it('accepts an ISO-8601 maxAge and keeps young entries', async () => {
    const c = client({ trim: { maxAge: 'PT1H' } });
    const a = await lastValueFrom(c.emit('aged-iso', 1));
    const b = await lastValueFrom(c.emit('aged-iso', 2));
    expect(((await redis.xrange('aged-iso', '-', '+')) as Entry[]).map(([id]) => id)).toEqual([a, b]);
  });

  it('with noMkStream, writes nothing to a missing stream and yields null', async () => {
    const c = client({ noMkStream: true });
    expect(await lastValueFrom(c.emit('absent', 1))).toBeNull();
    expect(await redis.exists('absent')).toBe(0);
    await redis.xadd('present', '*', 'seed', '1');
    expect(await lastValueFrom(c.emit('present', 1))).toMatch(/^\d+-\d+$/);
    const perCall = client();
    expect(await lastValueFrom(perCall.emit('absent', new RedisStreamsRecord(1, { noMkStream: true })))).toBeNull();
    expect(await redis.exists('absent')).toBe(0);
  });

  it('batches emits in flight: 2000 emits of one tick go out in a few socket writes, in order', async () => {
    const c = client({ trim: false });
    const writes = recordSocketWrites((await c.connect()) as Redis);
    try {
      // The pattern's first emit checks its partition metadata (one GET) first: warmed, not measured.
      await lastValueFrom(c.emit('batched', -1));
      const before = await xaddCalls(redis);
      writes.reset();
      const emitted = Array.from({ length: 2000 }, (_, i) => lastValueFrom(c.emit('batched', i)));
      // Nothing is written while the tick that emits runs (a lone first write would go out alone)...
      expect(writes.count()).toBe(0);
      const ids = await Promise.all(emitted);
      // ...then all of it at once.
      expect(writes.count()).toBe(1);
      expect(new Set(ids).size).toBe(2000);
      expect((await xaddCalls(redis)) - before).toBe(2000);
      // Written in emit order: ids ascend with the payloads.
      const entries = (await redis.xrange('batched', '-', '+')).slice(1);
      expect(entries.map(([id]) => id)).toEqual(ids);
      expect(entries.map(([, fields]) => JSON.parse(fields[fields.indexOf('data') + 1] as string))).toEqual(
        Array.from({ length: 2000 }, (_, i) => i),
      );
    } finally {
      writes.restore();
    }
  });

  it('refuses an empty pattern (plain, delayed, with a prefix, and a send) as the scheduler does: an error naming "pattern", nothing written', async () => {
    await redis.flushall();
    const plain = client();
    const prefixed = client({ streamPrefix: 'app:' });
    const scheduled = await new RedisStreamsScheduler(plain).schedule('', 1, { every: 1_000, key: 'k' }).catch((error: unknown) => error);
    const refusals = [
      await lastValueFrom(plain.emit('', { n: 1 })).catch((error: unknown) => error),
      await lastValueFrom(plain.emit('', new RedisStreamsRecord({ n: 2 }, { delay: 50 }))).catch((error: unknown) => error),
      await lastValueFrom(prefixed.emit('', { n: 3 })).catch((error: unknown) => error),
      await lastValueFrom(plain.send('', new RedisStreamsRecord({ n: 4 }, { timeout: 1_000 }))).catch((error: unknown) => error),
    ];
    expect(scheduled).toBeInstanceOf(RedisStreamsOptionError);
    for (const refused of refusals) {
      expect(refused).toBeInstanceOf(RedisStreamsOptionError);
      expect(refused).toMatchObject({ option: 'pattern', message: (scheduled as Error).message });
    }
    expect((scheduled as Error).message).toBe('Invalid option "pattern": must be a non-empty string, got ""');
    expect(await redis.dbsize()).toBe(0);
  });

  it('reuses one connection after the first emit (connect is idempotent)', async () => {
    const c = client();
    const [a, b] = await Promise.all([c.connect(), c.connect()]);
    expect(a).toBe(b);
    await sleep(0);
    expect(c.unwrap()).toBe(a);
  });
});

async function xaddCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  const match = /cmdstat_xadd:calls=(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}
