import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../src/client/redis-streams-client.js';
import { RedisStreamsServer } from '../src/server/redis-streams.server.js';
import { useRedisSentinel } from './helpers/redis-sentinel.js';
import { waitFor } from './helpers/wait.js';

// Its own set: this file kills the primary.
const harness = useRedisSentinel();

describe('failover through sentinels', () => {
  it('kill -9 of the primary mid-run: the sentinels promote the replica, producer and worker follow; every entry the replica had is handled', async () => {
    const set = harness.set;
    const stream = 'sfo';
    const connection = set.url;
    const handled = new Set<number>();
    const server = new RedisStreamsServer({ connection, group: 'sfo', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    server.on('error', () => undefined);
    server.addHandler(stream, async (n: number) => void handled.add(n), true);
    const listened = await new Promise<unknown>((resolve) => void server.listen(resolve));
    expect(listened).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 1_000 });
    client.on('error', () => undefined);

    const acknowledged = new Map<number, string>();
    const byId = new Map<string, number>();
    let failed = 0;
    let next = 0;
    let producing = true;
    const produce = (async () => {
      while (producing) {
        const n = next++;
        try {
          const id = (await lastValueFrom(client.emit(stream, n))) as string;
          acknowledged.set(n, id);
          byId.set(id, n);
        } catch {
          failed++;
          // Down: do not spin through thousands of failed emits while the sentinels decide.
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const old = set.primary;
    try {
      await waitFor(() => handled.size >= 200, '200 entries handled before the kill', { timeout: 20_000 });
      // What the replica holds just before the kill (it can only hold more at the kill itself).
      const replica = set.replica.client();
      const onReplica = ((await replica.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id);
      replica.disconnect();
      const acknowledgedBeforeKill = acknowledged.size;
      await old.kill();
      const killedAt = Date.now();
      const promoted = await set.waitForFailover(old);
      const failoverMs = Date.now() - killedAt;
      expect(promoted).toBe(set.replica);
      // The producer goes on by itself: 200 more acknowledged emits after the failover.
      const afterFailover = acknowledged.size;
      await waitFor(() => acknowledged.size >= afterFailover + 200, '200 emits acknowledged after the failover', { timeout: 20_000 });
      producing = false;
      await produce;

      // Every entry the replica had before the kill is handled by the worker, which followed by itself.
      const replicaHad = onReplica.map((id) => byId.get(id));
      expect(replicaHad.length).toBeGreaterThan(0);
      expect(replicaHad.every((n) => n !== undefined)).toBe(true);
      // What the new primary holds: the acknowledged ids that survived asynchronous replication.
      const redis = promoted.client();
      const present = new Set(((await redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id));
      const survived = [...acknowledged].filter(([, id]) => present.has(id)).map(([n]) => n);
      const lost = [...acknowledged].filter(([, id]) => !present.has(id)).map(([n]) => n);
      await waitFor(() => survived.every((n) => handled.has(n)) && replicaHad.every((n) => handled.has(n as number)), 'every surviving entry handled', {
        timeout: 30_000,
      });
      await waitFor(async () => ((await redis.xpending(stream, 'sfo')) as [number])[0] === 0, 'no entry pending', { timeout: 30_000 });
      redis.disconnect();
      console.log(
        `sentinel failover in ${failoverMs} ms: ${acknowledged.size} emits acknowledged (${acknowledgedBeforeKill} before the kill, ${onReplica.length} on the replica just before), ` +
          `${failed} failed during the failover, ${lost.length} acknowledged and lost by asynchronous replication, ${handled.size} handled`,
      );
      // Entries acknowledged after the failover were written to the new primary: none may be lost.
      expect(lost.filter((n) => n >= afterFailover)).toEqual([]);
    } finally {
      producing = false;
      await produce;
      await client.close();
      await server.close();
    }
  }, 120_000);
});
