import { Logger } from '@nestjs/common';
import { firstValueFrom, throwError, timeout, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient, RedisStreamsProgressError, RedisStreamsServer, type EntryProgressRecord, type RedisStreamsServerOptions } from '../../src/index.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Handler = (data: unknown, ctx: RedisStreamsContext) => unknown;

describe('ctx.progress, kept results, client.result and client.watch (real redis-server)', { timeout: 60_000 }, () => {
  const redis = useRedisServer();
  const servers: RedisStreamsServer[] = [];
  let client: RedisStreamsClient;
  const gates = new Map<number, () => void>();
  const gate = (n: number) => new Promise<void>((resolve) => gates.set(n, resolve));
  const open = async (n: number) => {
    await waitFor(() => gates.has(n), `entry ${n} to start`);
    gates.get(n)!();
  };

  beforeAll(() => {
    client = new RedisStreamsClient({ connection: redis.server.url });
  });
  afterAll(() => client.close());
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    Logger.overrideLogger(true as never);
  });

  async function start(pattern: string, handler: Handler, extras: Record<string, unknown>, options: Partial<RedisStreamsServerOptions> = {}): Promise<RedisStreamsServer> {
    Logger.overrideLogger(false as never);
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100, ...options });
    server.addHandler(pattern, handler as never, true, extras);
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    if (error !== undefined) {
      await server.close();
      throw error;
    }
    servers.push(server);
    return server;
  }
  const emit = async (stream: string, n: number): Promise<string> => (await redis.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n }))) as string;

  it('progress per item is coalesced into few writes, the last value wins; readable by progress() and entryStatus()', async () => {
    await start('long', async (data, ctx) => {
      for (let item = 1; item <= 200; item++) void ctx.progress({ done: item, of: 200 });
      await gate((data as { n: number }).n);
    }, {});
    const id = await emit('long', 1);
    await waitFor(async () => (await client.progress('long', id))?.value !== undefined, 'the progress');
    const progress = (await client.progress('long', id)) as EntryProgressRecord;
    expect([progress.value, progress.delivery]).toEqual([{ done: 200, of: 200 }, 1]);
    // 200 reports within the window: one write (one notice).
    expect(await redis.client.xlen('{long}:lifecycle')).toBe(1);
    expect(await redis.client.pttl(`{long}:progress:${id}`)).toBeGreaterThan(23 * 3600 * 1000);
    const status = await client.entryStatus('long', id);
    expect([status.state, status.progress?.value]).toEqual(['running', { done: 200, of: 200 }]);
    await open(1);
    await waitFor(async () => (await client.entryStatus('long', id)).state === 'done', 'done');
  });

  it('bad progress: not JSON-serializable, or over the cap, is a RedisStreamsProgressError thrown at the call', async () => {
    const errors: unknown[] = [];
    await start('badprogress', (_data, ctx) => {
      for (const value of [10n, undefined, 'x'.repeat(70_000)]) {
        try {
          void ctx.progress(value);
        } catch (error) {
          errors.push(error);
        }
      }
    }, {});
    await emit('badprogress', 1);
    await waitFor(() => errors.length === 3, 'three refusals');
    for (const error of errors) expect(error).toBeInstanceOf(RedisStreamsProgressError);
    expect((errors[2] as Error).message).toContain('over the cap of 65536');
    expect((errors[0] as Error).message).toContain('not JSON-serializable');
  });

  it('kept results: the return value (bytes as bytes), or the error; with the TTL', async () => {
    await start('kept', async (data) => {
      const { n } = data as { n: number };
      if (n === 2) throw new Error('no stock');
      return n === 3 ? Buffer.from([0, 255, 1]) : { total: n * 10 };
    }, { keepResults: { ttl: 'PT1M' }, retry: false, minIdleTime: 60_000 });
    const [ok, failed, bytes] = [await emit('kept', 1), await emit('kept', 2), await emit('kept', 3)];
    expect(await client.result('kept', ok, { wait: 5_000 })).toMatchObject({ state: 'done', value: { total: 10 }, delivery: 1 });
    expect(await client.result('kept', failed, { wait: 5_000 })).toMatchObject({ state: 'failed', error: { name: 'Error', message: 'no stock' }, delivery: 1 });
    expect((await client.result('kept', bytes, { wait: 5_000 }))).toMatchObject({ state: 'done', value: Buffer.from([0, 255, 1]) });
    const ttl = await redis.client.pttl(`{kept}:result:${ok}`);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    // Pending, not running any more, its last delivery failed: failed, with its error.
    await redis.client.xclaim('kept', 'g', 'worker', 0, failed, 'IDLE', 60_000, 'JUSTID');
    expect((await client.entryStatus('kept', failed)).state).toBe('failed');
    expect(await client.result('kept', '1-1')).toBeNull();
  });

  it('result with wait resolves when the entry settles (a blocking read, not a poll); watch emits progress and completes', async () => {
    await start('waited', async (data, ctx) => {
      const { n } = data as { n: number };
      await ctx.progress({ step: 1 });
      await gate(n);
      await ctx.progress({ step: 2 });
      await gate(n + 100);
      return `result ${n}`;
    }, { keepResults: { ttl: 60_000 } });
    const id = await emit('waited', 1);
    await waitFor(async () => (await client.progress('waited', id)) !== null, 'the first progress');
    const watched = firstValueFrom(client.watch('waited', id).pipe(toArray()));
    const result = client.result('waited', id, { wait: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await open(1);
    await waitFor(async () => ((await client.progress('waited', id))?.value as { step: number } | undefined)?.step === 2, 'the second progress');
    await open(101);
    expect(await result).toMatchObject({ state: 'done', value: 'result 1' });
    expect((await watched).map((progress) => progress.value)).toEqual([{ step: 1 }, { step: 2 }]);
  });

  it('many waits share one connection per stream (CLIENT LIST): 300 result waits and 3 watches of one stream, 5 waits of another: 2 connections; all get their outcome; close() leaves none', async () => {
    const waiting = new RedisStreamsClient({ connection: redis.server.url });
    const waitConnections = async (): Promise<number> =>
      String(await redis.client.call('CLIENT', 'LIST')).split('\n').filter((line) => line.includes('name=nestjs-redis-streams:client-wait ')).length;
    // EVALSHA, or EVAL when the script was not loaded yet.
    const scriptCalls = async (): Promise<number> => {
      const stats = await redis.client.info('commandstats');
      return [/cmdstat_evalsha:calls=(\d+)/, /cmdstat_eval:calls=(\d+)/].reduce((sum, pattern) => sum + Number(pattern.exec(stats)?.[1] ?? 0), 0);
    };
    try {
      const ids = [];
      for (let n = 1; n <= 300; n++) ids.push(await emit('many', n));
      const others = [];
      for (let n = 1; n <= 5; n++) others.push(await emit('many-b', n));
      const readsBefore = await scriptCalls();
      const results = [...ids, ...others].map((id, index) => waiting.result(index < ids.length ? 'many' : 'many-b', id, { wait: 40_000 }));
      const watches = ids.slice(0, 3).map((id) => firstValueFrom(waiting.watch('many', id).pipe(toArray())));
      // Every wait has read its record once (and registered before): what each would have opened is open now.
      await waitFor(async () => (await scriptCalls()) - readsBefore >= results.length, 'every wait to read its record');
      await waitFor(async () => (await waitConnections()) >= 2, 'the waits to block');
      expect(await waitConnections()).toBe(2);

      await start('many', async (data, ctx) => {
        await ctx.progress({ at: (data as { n: number }).n });
        return (data as { n: number }).n;
      }, { keepResults: { ttl: 60_000 } });
      await start('many-b', (data) => (data as { n: number }).n, { keepResults: { ttl: 60_000 } });
      const outcomes = await Promise.all(results);
      expect(outcomes.map((outcome) => (outcome as { value: number } | null)?.value)).toEqual([...ids.map((_, i) => i + 1), 1, 2, 3, 4, 5]);
      expect((await Promise.all(watches)).map((records) => records.map((record) => record.value))).toEqual([[{ at: 1 }], [{ at: 2 }], [{ at: 3 }]]);
      expect(await waitConnections()).toBeLessThanOrEqual(2);

      // A wait still out when the client closes ends (null), and its connection with it.
      const late = waiting.result('many', '1-1', { wait: 40_000 });
      await waitFor(async () => (await waitConnections()) === 1, 'the late wait to block');
      await waiting.close();
      expect(await late).toBeNull();
      await waitFor(async () => (await waitConnections()) === 0, 'no wait connection left after close()');
    } finally {
      await waiting.close();
    }
  });

  it('without keepResults, a delivery\'s last report carries its settlement notice (one write, not two); its watch ends with that report', async () => {
    await start('noted', async (data, ctx) => {
      const { n } = data as { n: number };
      await gate(n);
      void ctx.progress({ done: n });
    }, {});
    const id = await emit('noted', 1);
    await waitFor(() => gates.has(1), 'entry 1 to start');
    const watched = firstValueFrom(client.watch('noted', id).pipe(toArray()));
    // Its listener blocks on the notices once the watch is registered.
    await waitFor(async () => /name=nestjs-redis-streams:client-wait .*cmd=xread /.test(String(await redis.client.call('CLIENT', 'LIST'))), 'the watch to block');
    await open(1);
    expect((await watched).map((progress) => progress.value)).toEqual([{ done: 1 }]);
    const notices = await redis.client.xrange('{noted}:lifecycle', '-', '+');
    expect(notices.map(([, fields]) => fields)).toEqual([['id', id, 'kind', 'settled']]);
  });

  it('a watch of an entry settled before it began completes at once with its last progress, without keepResults; also a dead-lettered (cancelled) or unknown one', async () => {
    await start('settled', async (data, ctx) => {
      void ctx.progress({ done: (data as { n: number }).n });
    }, {});
    const done = await emit('settled', 1);
    await waitFor(async () => (await client.entryStatus('settled', done)).state === 'done', 'done');
    // Nobody reads this stream: the cancel dead-letters the waiting entry.
    const waiting = await emit('settled-cancelled', 2);
    await client.cancel('settled-cancelled', waiting, 'not wanted');
    expect((await client.entryStatus('settled-cancelled', waiting)).state).toBe('dead-lettered');
    const watched = (pattern: string, id: string) => firstValueFrom(client.watch(pattern, id).pipe(toArray(), timeout({ first: 5_000, with: () => throwError(() => new Error(`the watch of ${id} did not complete`)) })));
    expect((await watched('settled', done)).map((progress) => progress.value)).toEqual([{ done: 1 }]);
    expect(await watched('settled-cancelled', waiting)).toEqual([]);
    expect(await watched('settled', '1-1')).toEqual([]);
  });

  it('consume: two callers at once, exactly one gets the result', async () => {
    await start('consumed', async (data) => {
      await gate((data as { n: number }).n);
      return 'once';
    }, { keepResults: { ttl: 60_000 } });
    const id = await emit('consumed', 7);
    const both = Promise.all([client.result('consumed', id, { wait: 3_000, consume: true }), client.result('consumed', id, { wait: 3_000, consume: true })]);
    await open(7);
    const results = await both;
    expect(results.filter((result) => result !== null)).toEqual([expect.objectContaining({ state: 'done', value: 'once' })]);
    expect(await redis.client.exists(`{consumed}:result:${id}`)).toBe(0);
  });

  it('bad input: bad TTLs and options name the option; an unknown entry of a partitioned pattern is named', async () => {
    await expect(start('badttl', () => undefined, { keepResults: { ttl: 'soon' } })).rejects.toThrow('extras.keepResults (handler "badttl").ttl');
    await expect(start('badttl2', () => undefined, { keepResults: 30 })).rejects.toThrow('extras.keepResults (handler "badttl2")');
    expect(() => new RedisStreamsServer({ connection: redis.server.url, group: 'g', keepResults: { ttl: -1 } })).toThrow('keepResults.ttl');
    await expect(client.result('kept', '1-1', { wait: 'later' })).rejects.toThrow('"wait"');
    const parted = new RedisStreamsClient({ connection: redis.server.url, partitions: { parted: 2 } });
    try {
      await expect(parted.result('parted', '1-1')).rejects.toThrow('entry 1-1 is in none of the streams of "parted"');
    } finally {
      await parted.close();
    }
    expect(await pendingRows(redis.client, 'kept', 'g')).toHaveLength(1);
  });
});

describe('client.watch across a Redis restart (real redis-server, AOF)', { timeout: 90_000 }, () => {
  const redis = useRedisServer({ appendOnly: true });

  it('keeps watching: the progress written after the restart arrives, and the watch completes with the outcome', async () => {
    Logger.overrideLogger(false as never);
    const client = new RedisStreamsClient({ connection: redis.server.url });
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
    let release: (() => void) | undefined;
    server.addHandler(
      'restarted',
      (async (_data: unknown, ctx: RedisStreamsContext) => {
        await ctx.progress({ step: 1 });
        await new Promise<void>((resolve) => (release = resolve));
        await ctx.progress({ step: 2 });
        return 'survived';
      }) as never,
      true,
      { keepResults: { ttl: 60_000 } },
    );
    try {
      await new Promise<unknown>((resolve) => void server.listen(resolve));
      const id = (await redis.client.xadd('restarted', '*', 'pattern', 'restarted', 'data', '{}')) as string;
      await waitFor(async () => (await client.progress('restarted', id)) !== null, 'the first progress');
      const seen: unknown[] = [];
      const done = new Promise<void>((resolve, reject) =>
        client.watch('restarted', id).subscribe({ next: (progress) => seen.push(progress.value), complete: resolve, error: reject }),
      );
      await waitFor(() => seen.length === 1, 'the kept progress');
      await redis.server.restart();
      // Progress writes are best-effort (a failed one is logged): the worker must be back before it reports.
      const commands = (server as unknown as { commandConnection(): { status: string } }).commandConnection();
      await waitFor(() => commands.status === 'ready', 'the worker to reconnect', { timeout: 20_000 });
      release!();
      await done;
      expect(seen).toEqual([{ step: 1 }, { step: 2 }]);
      expect(await client.result('restarted', id)).toMatchObject({ state: 'done', value: 'survived' });
    } finally {
      release?.();
      await server.close();
      await client.close();
      Logger.overrideLogger(true as never);
    }
  });
});
