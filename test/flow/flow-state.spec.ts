import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { permitKeys, pausedKey } from '../../src/flow/flow-keys.js';
import { GlobalPermits } from '../../src/flow/global-permits.js';
import { PauseWatch } from '../../src/flow/pause-watch.js';
import { pauseGroup } from '../../src/flow/pause-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** The flow-control state keepers on their own, against real Redis: what workers count and see. */
describe('flow-control state: permit counts and the pause watch', () => {
  const redis = useRedisServer();
  const closing: Array<() => unknown> = [];
  const warnings: string[] = [];
  const warn = (message: string) => warnings.push(message);
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
    warnings.length = 0;
    await redis.client.flushall();
  });

  it('a renewal states the count this worker holds: a count that drifted in Redis is set right', async () => {
    const permits = new GlobalPermits(redis.client, 'calls', 'g', 'w1', { max: 10, leaseMs: 1_000 }, warn);
    closing.push(() => permits.close());
    expect(await permits.acquire(2)).toBe(2);
    const { holders } = permitKeys('calls', 'g');
    // As after an acquire resent on a reconnect, or a release lost with the connection.
    await redis.client.hset(holders, 'w1', '5');
    await waitFor(async () => (await redis.client.hget(holders, 'w1')) === '2', 'the renewal to state 2', { timeout: 3_000 });
    permits.release(2);
    await waitFor(async () => (await redis.client.hlen(holders)) === 0, 'both given back');
    expect(warnings).toEqual([]);
  });

  it('a watch whose ACL user loses the pause key forgets the pause it saw (else its readers would wait for good) and warns once', async () => {
    await redis.client.call('ACL', 'SETUSER', 'watcher', 'reset', 'on', '>watcher-pw', '+hello', '+auth', '+ping', '+info', '+client|setname', '+hmget', `~${pausedKey('orders')}`);
    for (const rule of ['+client|setinfo', '+client|maint_notifications']) await redis.client.call('ACL', 'SETUSER', 'watcher', rule).catch(() => undefined);
    const client = new Redis(`redis://watcher:watcher-pw@127.0.0.1:${redis.server.port}`);
    closing.push(() => client.disconnect());
    await pauseGroup(redis.client, 'orders', 'g');
    const changes: boolean[] = [];
    const watch = new PauseWatch(client, [{ stream: 'orders', group: 'g' }], 50, (_target, paused) => changes.push(paused), warn);
    closing.push(() => watch.stop());
    await watch.start();
    expect(watch.isPaused('orders', 'g')).toBe(true);
    const seen = watch.version;
    await redis.client.call('ACL', 'SETUSER', 'watcher', 'resetkeys');
    await waitFor(() => warnings.length > 0, 'the refused poll');
    expect(watch.isPaused('orders', 'g')).toBe(false);
    expect(watch.version).toBeGreaterThan(seen);
    await sleep(200);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('pause / resume is off on this worker');
    expect(warnings[0]).toContain(`~${pausedKey('orders')}`);
  });
});
