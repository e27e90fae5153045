import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsAbortError, RedisStreamsHandlerTimeoutError, RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import type { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import type { DeliveryAborts } from '../../src/lifecycle/delivery-abort.js';
import { pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Handler = (data: unknown, ctx: RedisStreamsContext) => unknown;

describe('ctx.signal and extras.timeout (real redis-server)', { timeout: 60_000 }, () => {
  const redis = useRedisServer();
  const servers: RedisStreamsServer[] = [];
  const warnings: string[] = [];

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.close()));
    Logger.overrideLogger(true as never);
    warnings.length = 0;
  });

  async function start(pattern: string, handler: Handler, extras: Record<string, unknown>, options: Partial<RedisStreamsServerOptions> = {}): Promise<RedisStreamsServer> {
    Logger.overrideLogger({ log: () => undefined, error: () => undefined, warn: (message: unknown) => warnings.push(String(message)), debug: () => undefined, verbose: () => undefined, fatal: () => undefined } as never);
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100, ...options });
    server.addHandler(pattern, handler as never, true, extras);
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    expect(error).toBeUndefined();
    servers.push(server);
    return server;
  }
  const abortsOf = (server: RedisStreamsServer): DeliveryAborts => (server as unknown as { parts: { handling: { aborts: DeliveryAborts } } }).parts.handling.aborts;
  const emit = async (stream: string, n: number): Promise<string> => (await redis.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n }))) as string;

  it('a handler that never resolves: its signal aborts at the time limit, each delivery fails, then it is dead-lettered with the timeout error', async () => {
    const reasons: unknown[] = [];
    await start(
      'stuck',
      (_data, ctx) => {
        ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
        return new Promise(() => undefined);
      },
      { timeout: 150, maxDeliveries: 2, retry: { type: 'fixed', delay: 50 }, minIdleTime: 60_000 },
      { recovery: { interval: 50 } },
    );
    const id = await emit('stuck', 1);
    await waitFor(async () => (await redis.client.xlen('{stuck}:dead')) === 1, 'the dead letter', { timeout: 20_000 });
    const [[, fields]] = (await redis.client.xrange('{stuck}:dead', '-', '+')) as [string, string[]][];
    expect([fields[3], fields[9], fields[11]]).toEqual([id, '2', 'max_deliveries']);
    expect(fields[13]).toContain('did not finish within its time limit (extras.timeout 150 ms)');
    expect(reasons).toHaveLength(2);
    for (const reason of reasons) {
      expect(reason).toBeInstanceOf(RedisStreamsHandlerTimeoutError);
      expect((reason as RedisStreamsHandlerTimeoutError).reason).toBe('timeout');
    }
    expect(await pendingRows(redis.client, 'stuck', 'g')).toEqual([]);
  });

  it('a late outcome is ignored (the entry stays failed, not acked) and logged once', async () => {
    const server = await start(
      'late',
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 400));
        return 'finished anyway';
      },
      { timeout: 100, retry: false, minIdleTime: 60_000 },
    );
    const id = await emit('late', 1);
    await waitFor(() => warnings.some((line) => line.includes('after its time limit')), 'the late outcome logged');
    const late = warnings.filter((line) => line.includes('after its time limit'));
    expect(late).toEqual([`handler of entry ${id} of "late" (group "g") returned after its time limit: ignored, the delivery was settled as failed at the deadline`]);
    expect((await pendingRows(redis.client, 'late', 'g')).map((row) => [row.id, row.deliveries])).toEqual([[id, 1]]);
    expect(abortsOf(server).size).toBe(0);
  });

  it('unused, nothing is kept per entry; a signal read and settled is forgotten', async () => {
    let read = 0;
    const server = await start('plain', (data, ctx) => {
      if ((data as { n: number }).n % 2 === 0) read += ctx.signal.aborted ? 0 : 1;
    }, {});
    for (let n = 0; n < 10; n++) await emit('plain', n);
    await waitFor(async () => (await pendingRows(redis.client, 'plain', 'g')).length === 0 && read === 5, 'every entry acked');
    expect(abortsOf(server).size).toBe(0);
  });

  it('the shutdown deadline aborts a running handler with reason shutdown', async () => {
    let reason: unknown;
    let started = false;
    const server = await start('closing', async (_data, ctx) => {
      started = true;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      reason = ctx.signal.reason;
      throw reason;
    }, {}, { shutdownTimeout: 200 });
    await emit('closing', 1);
    await waitFor(() => started, 'the handler to start');
    servers.splice(servers.indexOf(server), 1);
    await server.close();
    expect(reason).toBeInstanceOf(RedisStreamsAbortError);
    expect((reason as RedisStreamsAbortError).reason).toBe('shutdown');
    expect(await pendingRows(redis.client, 'closing', 'g')).toHaveLength(1);
  });

  it('a lease lost to another consumer aborts the handler with reason lease-lost', async () => {
    let reason: unknown;
    let started = false;
    await start('robbed', async (_data, ctx) => {
      started = true;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
      reason = ctx.signal.reason;
    }, { minIdleTime: 60_000 }, { recovery: { leaseInterval: 50 } });
    const id = await emit('robbed', 1);
    await waitFor(() => started, 'the handler to start');
    await redis.client.xclaim('robbed', 'g', 'thief', 0, id, 'JUSTID');
    await waitFor(() => reason !== undefined, 'the abort');
    expect((reason as RedisStreamsAbortError).reason).toBe('lease-lost');
    expect((reason as Error).message).toContain('consumer "thief" holds it now');
  });

  it('a batch handler: one signal for the batch, aborted at its time limit; every entry stays failed', async () => {
    const signals: AbortSignal[] = [];
    await start(
      'batched',
      ((_payloads: unknown[], ctx: RedisStreamsBatchContext) => {
        signals.push(ctx.signal);
        return new Promise(() => undefined);
      }) as never,
      { batch: { size: 3, waitMs: 50 }, timeout: 150, retry: false, minIdleTime: 60_000 },
    );
    for (let n = 0; n < 3; n++) await emit('batched', n);
    await waitFor(() => signals.length === 1 && signals[0]!.aborted, 'the batch signal aborted');
    expect(signals[0]!.reason).toBeInstanceOf(RedisStreamsHandlerTimeoutError);
    expect((signals[0]!.reason as Error).message).toMatch(/^handler of a batch of 3 entries of "batched"/);
    expect((await pendingRows(redis.client, 'batched', 'g')).map((row) => row.deliveries)).toEqual([1, 1, 1]);
  });

  it('bad timeouts and request handlers: a clear error naming the option', async () => {
    const bad = new RedisStreamsServer({ connection: redis.server.url, group: 'g' });
    bad.addHandler('x', (async () => undefined) as never, true, { timeout: 'soon' });
    const error = await new Promise<unknown>((resolve) => void bad.listen(resolve));
    expect(String(error)).toContain('extras.timeout (handler "x")');
    await bad.close();
    const request = new RedisStreamsServer({ connection: redis.server.url, group: 'g' });
    request.addHandler('q', (async () => undefined) as never, false, { timeout: 100 });
    const refused = await new Promise<unknown>((resolve) => void request.listen(resolve));
    expect(String(refused)).toContain("applies to @EventPattern handlers: a request is bounded by its caller's timeout");
    await request.close();
  });
});
