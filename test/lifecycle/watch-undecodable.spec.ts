import { Logger } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient, RedisStreamsServer } from '../../src/index.js';
import { lifecycleNoticesKey, progressKey } from '../../src/lifecycle/lifecycle-keys.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * client.watch when the kept progress it reads at a progress notice does not decode: the watch
 * errors at that read, naming the entry, as it does at its start or at a resync
 * (watch-faults.spec.ts). Not swallowed, so that later progress is not dropped and the error
 * does not come back at the settlement, an old error for a later read.
 */
describe('client.watch: a progress record that does not decode at a progress notice', () => {
  const redis = useRedisServer();
  let client: RedisStreamsClient;
  let server: RedisStreamsServer;
  const releases: (() => void)[] = [];
  // Set at the end of a test: the handler's later steps go on at once, so the server closes without waiting for it.
  let released = false;

  beforeAll(() => Logger.overrideLogger(false as never));
  beforeEach(() => (released = false));
  afterEach(async () => {
    released = true;
    for (const release of releases.splice(0)) release();
    await server.close();
    await client.close();
  });
  afterAll(() => Logger.overrideLogger(true as never));
  /** The client's blocking connections that listen for lifecycle notices (one per notice stream with waiters). */
  const noticeConnections = async (): Promise<number> =>
    String(await redis.client.call('CLIENT', 'LIST'))
      .split('\n')
      .filter((line) => line.includes('name=nestjs-redis-streams:client-wait ')).length;

  it('errors the watch at once with the decode error, and stops listening for its notices', async () => {
    const stream = 'undecodable-at-notice';
    client = new RedisStreamsClient({ connection: redis.server.url });
    server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
    const step = (): Promise<void> => (released ? Promise.resolve() : new Promise<void>((resolve) => releases.push(resolve)));
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
    await new Promise<unknown>((resolve) => void server.listen(resolve));
    const id = (await redis.client.xadd(stream, '*', 'pattern', stream, 'data', '{}')) as string;
    await waitFor(async () => (await client.progress(stream, id)) !== null && releases.length === 1, 'the first progress');

    const seen: unknown[] = [];
    const failures: Error[] = [];
    client.watch(stream, id).subscribe({
      next: (progress) => seen.push(progress.value),
      error: (error: Error) => failures.push(error),
    });
    await waitFor(() => seen.length === 1, 'the kept progress');
    // The watch's listener blocks on the notices (its own connection) while the watch lasts.
    await waitFor(async () => (await noticeConnections()) === 1, 'the watch to listen');
    // The kept progress overwritten by something that is not ours, and a progress notice of the entry.
    await redis.client.set(progressKey(stream, id), 'not json');
    await redis.client.xadd(lifecycleNoticesKey(stream), '*', 'id', id, 'kind', 'progress');
    await waitFor(() => failures.length === 1, 'the watch to error');
    expect(failures[0]!.message).toBe(`Cannot decode the record "${progressKey(stream, id)}": ${(failures[0]!.cause as Error).message}`);
    expect(failures[0]!.message).toContain(id);
    expect(seen).toEqual([{ step: 1 }]);

    // The errored watch lets go of the notices: its listener, the last of the stream, ends and closes its connection.
    await waitFor(async () => (await noticeConnections()) === 0, 'the watch to stop listening');
  });
});
