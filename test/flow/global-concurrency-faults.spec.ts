import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { permitKeys } from '../../src/flow/flow-keys.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { HoldingProxy } from '../helpers/holding-proxy.js';
import { pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = 'permitted';
const LEASE_MS = 1_500;
/** The worker's command connection: the permits' acquires and releases go over it. */
const COMMANDS = 'nestjs-redis-streams:server';

const handled: number[] = [];

@Controller()
class PermittedController {
  @EventPattern<string>(STREAM, { globalConcurrency: { max: 10, lease: LEASE_MS } })
  onPermitted(@Payload() data: { n: number }): void {
    handled.push(data.n);
  }
}

/**
 * extras.globalConcurrency when Redis' count of a worker's permits and the worker's own part: the
 * worker's command connection fails while the reader's stays up (test/helpers/holding-proxy.ts).
 */
describe('extras.globalConcurrency keeps no permit held for ever when its command connection fails', () => {
  const redis = useRedisServer();
  let proxy: HoldingProxy;
  const running: RunningServer[] = [];
  const holders = async (): Promise<Record<string, string>> => (await redis.client.hgetall(permitKeys(STREAM, 'g').holders)) as Record<string, string>;
  const publish = async (from: number, count: number): Promise<void> => {
    for (let n = from; n < from + count; n++) await xaddEvent(redis.client, STREAM, STREAM, { n });
  };

  beforeAll(async () => {
    proxy = await HoldingProxy.start(redis.server.port);
  });
  afterAll(async () => {
    await proxy.close();
  });
  afterEach(async () => {
    // A command connection left muted (a failure half-way) would never answer close().
    proxy.dropAndHold(COMMANDS);
    proxy.release();
    for (const server of running.splice(0)) await server.app.close();
    handled.length = 0;
    await redis.client.flushall();
  });

  it('an acquire Redis ran twice (its reply lost, sent again after the reconnect): once idle, the worker holds none in Redis either', async () => {
    // readBatch 2: each read asks for 2 of the 10 permits, so the acquire sent again is granted again.
    running.push(
      await startServer(
        { connection: proxy.url, group: 'g', consumer: 'w1', blockMs: 200, concurrency: 2, readBatch: 2, recovery: { minIdleTime: 60_000 } },
        [PermittedController],
      ),
    );
    await publish(0, 4);
    await waitFor(() => handled.length === 4, 'the first entries handled');
    await waitFor(async () => (await pendingCount(redis.client, STREAM, 'g')) === 0, 'the first entries acked');
    await waitFor(async () => Object.keys(await holders()).length === 0, 'their permits given back');
    // Idle, the reader asks for 2 permits before each read (then gives them back, then XREAD BLOCK).
    // Its next acquire is kept, then runs in Redis with its reply lost.
    proxy.freeze(COMMANDS);
    await waitFor(() => proxy.heldText(COMMANDS).includes('acquire'), 'the next acquire sent');
    proxy.muteReplies(COMMANDS);
    proxy.thaw(COMMANDS);
    await waitFor(async () => (await holders()).w1 === '2', 'the acquire ran in Redis');
    proxy.dropAndHold(COMMANDS);
    await waitFor(() => proxy.held > 0, 'the command connection reconnecting (held)');
    // ioredis sends the unanswered acquire again: Redis grants 2 more, the worker counts the 2 of its one reply.
    proxy.release();
    await publish(4, 4);
    await waitFor(() => handled.length === 8, 'the entries published after the reconnect handled');
    await waitFor(async () => (await pendingCount(redis.client, STREAM, 'g')) === 0, 'every entry acked');
    expect([...handled].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    // Holding none, it says so: the 2 Redis counted beyond its own go (they were renewed for ever by each idle read's grant).
    // The idle reader still takes 2 for an instant before each read: the check is on the holders seen
    // empty, not on a second read that may fall in such an instant.
    let seen = await holders();
    await waitFor(async () => Object.keys((seen = await holders())).length === 0, 'no permit left held', { timeout: 3 * LEASE_MS }).catch(() => undefined);
    expect(seen).toEqual({});
  });
});
