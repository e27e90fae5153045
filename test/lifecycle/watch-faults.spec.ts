import { Logger } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient, RedisStreamsServer } from '../../src/index.js';
import { lifecycleNoticesKey, progressKey } from '../../src/lifecycle/lifecycle-keys.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { HoldingProxy } from '../helpers/holding-proxy.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** The client's command connection: a watch's reads go over it. */
const CLIENT_COMMANDS = 'nestjs-redis-streams:client';
/** The client's blocking connection on the lifecycle notices. */
const CLIENT_WAITS = 'nestjs-redis-streams:client-wait';

/** One entry whose handler reports `{ step: 1 }`, waits, reports `{ step: 2 }`, waits again, and returns. */
interface SteppedEntry {
  readonly client: RedisStreamsClient;
  readonly id: string;
  /** The handler's waits so far, in order: call one to let it go on. */
  readonly releases: (() => void)[];
}

/**
 * client.watch reads on after a Redis restart at any of its steps: a restart cuts the connection
 * under one of the watch's own reads (test/helpers/holding-proxy.ts), which the client aborts (it
 * resends nothing), and the watch must not end with that error.
 */
describe('client.watch when a restart cuts one of its reads', () => {
  const redis = useRedisServer();
  let proxy: HoldingProxy;
  let cleanUp: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    proxy = await HoldingProxy.start(redis.server.port);
    Logger.overrideLogger(false as never);
  });
  afterEach(async () => {
    await cleanUp?.();
    cleanUp = undefined;
  });
  afterAll(async () => {
    Logger.overrideLogger(true as never);
    await proxy.close();
  });

  /** A worker on Redis itself, a client through the proxy, and one entry of `stream` reported at step 1. */
  async function steppedEntry(stream: string): Promise<SteppedEntry> {
    const client = new RedisStreamsClient({ connection: proxy.url });
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
    const releases: (() => void)[] = [];
    const step = (): Promise<void> => new Promise<void>((resolve) => releases.push(resolve));
    server.addHandler(
      stream,
      (async (_data: unknown, ctx: RedisStreamsContext) => {
        await ctx.progress({ step: 1 });
        await step();
        await ctx.progress({ step: 2 });
        await step();
        return 'done';
      }) as never,
      true,
      { keepResults: { ttl: 60_000 } },
    );
    cleanUp = async () => {
      for (const release of releases) release();
      await server.close();
      await client.close();
    };
    await new Promise<unknown>((resolve) => void server.listen(resolve));
    const id = (await redis.client.xadd(stream, '*', 'pattern', stream, 'data', '{}')) as string;
    await waitFor(async () => (await client.progress(stream, id)) !== null && releases.length === 1, 'the first progress');
    return { client, id, releases };
  }

  // XREVRANGE: its place in the notices; GET: the kept progress; EXISTS: whether it settled already.
  it.each(['XREVRANGE', 'GET', 'EXISTS'])('the %s it sends is cut: the watch goes on and completes with every progress and the outcome', async (command) => {
    const stream = `cut-${command.toLowerCase()}`;
    const { client, id, releases } = await steppedEntry(stream);
    const cutBefore = proxy.cut;
    proxy.dropOnCommand(CLIENT_COMMANDS, command);
    const seen: unknown[] = [];
    const done = new Promise<void>((resolve, reject) =>
      client.watch(stream, id).subscribe({ next: (progress) => seen.push(progress.value), complete: resolve, error: reject }),
    );
    await waitFor(() => seen.length === 1, 'the kept progress');
    releases[0]!();
    await waitFor(() => releases.length === 2, 'the second progress');
    releases[1]!();
    await done;
    expect(proxy.cut).toBe(cutBefore + 1);
    expect(seen).toEqual([{ step: 1 }, { step: 2 }]);
  });

  it('notices lost to a restart while the entry settles (its place read as gone): the watch reads whether it settled, and completes', async () => {
    const stream = 'cut-notices';
    const { client, id, releases } = await steppedEntry(stream);
    const seen: unknown[] = [];
    let completed = false;
    client.watch(stream, id).subscribe({ next: (progress) => seen.push(progress.value), complete: () => (completed = true) });
    await waitFor(() => seen.length === 1, 'the kept progress');
    // Redis loading its data after a restart: the notices' next read fails, and so does the check
    // of its place after it, read as notices lost (a restart without persistence).
    const loading = 'LOADING Redis is loading the dataset in memory';
    const failedBefore = proxy.failed;
    proxy.failNext(CLIENT_WAITS, 'XREAD', loading);
    proxy.failNext(CLIENT_COMMANDS, 'XRANGE', loading);
    releases[0]!();
    await waitFor(() => seen.length === 2 && releases.length === 2, 'the second progress');
    // Settles (its result notice written) before the listener reads its place again, 250 ms after the cut.
    releases[1]!();
    await waitFor(async () => (await client.result(stream, id)) !== null, 'the kept result');
    await waitFor(() => proxy.failed === failedBefore + 2, 'both reads failed');
    await waitFor(() => completed, 'the watch to complete');
    expect(seen).toEqual([{ step: 1 }, { step: 2 }]);
  });

  it('notices lost to a restart and the kept progress undecodable at the resync: the watch errors, naming the entry', async () => {
    const stream = 'resync-undecodable';
    const { client, id, releases } = await steppedEntry(stream);
    const seen: unknown[] = [];
    let failure: Error | undefined;
    client.watch(stream, id).subscribe({ next: (progress) => seen.push(progress.value), error: (error: Error) => (failure = error) });
    await waitFor(() => seen.length === 1, 'the kept progress');
    await redis.client.set(progressKey(stream, id), 'not json');
    // The notices' next read fails, and so does the check of its place after it: notices lost, the watch resyncs.
    const loading = 'LOADING Redis is loading the dataset in memory';
    const failedBefore = proxy.failed;
    proxy.failNext(CLIENT_WAITS, 'XREAD', loading);
    proxy.failNext(CLIENT_COMMANDS, 'XRANGE', loading);
    // A notice of another entry ends the listener's blocking read, so that its next one fails.
    await redis.client.xadd(lifecycleNoticesKey(stream), '*', 'id', '0-1', 'kind', 'progress');
    await waitFor(() => proxy.failed === failedBefore + 2, 'both reads failed');
    await waitFor(() => failure !== undefined, 'the watch to error');
    expect(failure!.message).toBe(`Cannot decode the record "${progressKey(stream, id)}": ${(failure!.cause as Error).message}`);
    expect(failure!.message).toContain(id);
    expect(seen).toEqual([{ step: 1 }]);
    // The handler runs to its end, so that the worker closes at once.
    releases[0]!();
    await waitFor(() => releases.length === 2, 'the second progress');
    releases[1]!();
  });
});
