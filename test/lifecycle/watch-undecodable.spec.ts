import { Logger } from '@nestjs/common';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
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

  beforeAll(() => Logger.overrideLogger(false as never));
  afterEach(async () => {
    for (const release of releases.splice(0)) release();
    await server.close();
    await client.close();
  });
  afterAll(() => Logger.overrideLogger(true as never));

  it('errors the watch at once with the decode error, and emits nothing after it', async () => {
    const stream = 'undecodable-at-notice';
    client = new RedisStreamsClient({ connection: redis.server.url });
    server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
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
    await new Promise<unknown>((resolve) => void server.listen(resolve));
    const id = (await redis.client.xadd(stream, '*', 'pattern', stream, 'data', '{}')) as string;
    await waitFor(async () => (await client.progress(stream, id)) !== null && releases.length === 1, 'the first progress');

    const seen: unknown[] = [];
    const failures: Error[] = [];
    let completed = false;
    client.watch(stream, id).subscribe({
      next: (progress) => seen.push(progress.value),
      error: (error: Error) => failures.push(error),
      complete: () => (completed = true),
    });
    await waitFor(() => seen.length === 1, 'the kept progress');
    // The kept progress overwritten by something that is not ours, and a progress notice of the entry.
    await redis.client.set(progressKey(stream, id), 'not json');
    await redis.client.xadd(lifecycleNoticesKey(stream), '*', 'id', id, 'kind', 'progress');
    await waitFor(() => failures.length === 1, 'the watch to error');
    expect(failures[0]!.message).toBe(`Cannot decode the record "${progressKey(stream, id)}": ${(failures[0]!.cause as Error).message}`);
    expect(failures[0]!.message).toContain(id);

    // The handler goes on (a good progress, then its result): the ended watch sees none of it.
    releases[0]!();
    await waitFor(() => releases.length === 2, 'the second progress');
    releases[1]!();
    await waitFor(async () => (await client.result(stream, id)) !== null, 'the kept result');
    expect(seen).toEqual([{ step: 1 }]);
    expect([failures.length, completed]).toEqual([1, false]);
  });
});
