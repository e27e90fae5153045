import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { startCountedProducer } from '../helpers/counted-producer.js';
import { waitFor } from '../helpers/wait.js';

// Its own cluster: this file kills a master.
const harness = useRedisCluster();

describe('failover on a real local cluster', () => {
  it('kill -9 of the stream\'s master mid-run: a replica takes over, producer and worker go on; every surviving entry is handled', async () => {
    const cluster = harness.cluster;
    const stream = 'fo-a';
    const connection = { cluster: { nodes: cluster.urls } };
    const handled = new Set<number>();
    const server = new RedisStreamsServer({ connection, group: 'fo', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    server.on('error', () => undefined);
    server.addHandler(stream, async (n: number) => void handled.add(n), true);
    const listened = await new Promise<unknown>((resolve) => void server.listen(resolve));
    expect(listened).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 1_000 });
    client.on('error', () => undefined);

    const producer = startCountedProducer(client, stream);
    const { acknowledged } = producer;
    try {
      await waitFor(() => handled.size >= 200, '200 entries handled before the kill', { timeout: 20_000 });
      const master = await cluster.masterOf(hashSlotOf(stream));
      const acknowledgedBeforeKill = acknowledged.size;
      await master.kill();
      await waitFor(async () => (await cluster.masterOf(hashSlotOf(stream)).catch(() => master)) !== master, 'a replica to take the slot', { timeout: 20_000 });
      await cluster.waitUntilHealthy();
      // The producer goes on by itself: 200 more acknowledged emits after the failover.
      const afterFailover = acknowledged.size;
      await waitFor(() => acknowledged.size >= afterFailover + 200, '200 emits acknowledged after the failover', { timeout: 20_000 });
      await producer.stop();

      // What the new master holds: the acknowledged ids that survived asynchronous replication.
      const redis = cluster.client();
      const present = new Set<string>();
      for (const [id] of (await redis.xrange(stream, '-', '+')) as [string, string[]][]) present.add(id);
      const survived = [...acknowledged].filter(([, id]) => present.has(id)).map(([n]) => n);
      const lost = [...acknowledged].filter(([n, id]) => !present.has(id) && !handled.has(n)).map(([n]) => n);
      // The worker goes on by itself: every surviving entry is handled, nothing stays pending.
      await waitFor(() => survived.every((n) => handled.has(n)), 'every surviving entry handled', { timeout: 30_000 });
      await waitFor(async () => ((await redis.xpending(stream, 'fo')) as [number])[0] === 0, 'no entry pending', { timeout: 30_000 });
      redis.disconnect();
      console.log(
        `failover: ${acknowledged.size} emits acknowledged (${acknowledgedBeforeKill} before the kill), ${producer.failures.length} failed during the failover, ` +
          `${lost.length} acknowledged and lost by asynchronous replication, ${handled.size} handled`,
      );
      // Entries acknowledged after the failover were written to the new master: none may be lost.
      expect(lost.filter((n) => n >= afterFailover)).toEqual([]);
    } finally {
      await producer.stop();
      await client.close();
      await server.close();
    }
  }, 120_000);
});
