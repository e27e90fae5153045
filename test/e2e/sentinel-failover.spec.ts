import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import type { RedisServerProcess } from '../helpers/redis-server.js';
import { useRedisSentinel } from '../helpers/redis-sentinel.js';
import { startCountedProducer } from '../helpers/counted-producer.js';
import { waitFor } from '../helpers/wait.js';

/** Connections named by the transport on `node`. */
async function transportConnections(node: RedisServerProcess): Promise<string[]> {
  const redis = node.client();
  try {
    return [...((await redis.client('LIST')) as string).matchAll(/ name=(nestjs-redis-streams:\S+)/g)].map((match) => match[1] as string);
  } finally {
    redis.disconnect();
  }
}

describe('failover through sentinels: kill -9 of the primary', () => {
  // Each describe has its own set: each fails its primary over.
  const harness = useRedisSentinel();

  it('kill -9 of the primary mid-run: the sentinels promote the replica, producer and worker follow; every entry the promoted replica holds is handled or dead-lettered', { timeout: 120_000 }, async () => {
    const set = harness.set;
    const stream = 'sfo';
    const connection = set.url;
    // Counted by entry id (what Redis acknowledged), not by payload: a write whose reply the kill
    // swallowed may be on the replica without the producer knowing its id.
    const handledIds = new Set<string>();
    const server = new RedisStreamsServer({ connection, group: 'sfo', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    server.on('error', () => undefined);
    server.addHandler(stream, async (_n: number, context: RedisStreamsContext) => void handledIds.add(context.getId()), true);
    const listened = await new Promise<unknown>((resolve) => void server.listen(resolve));
    expect(listened).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 1_000 });
    client.on('error', () => undefined);

    // Down: no spinning through thousands of failed emits while the sentinels decide.
    const producer = startCountedProducer(client, stream, 50);
    const { acknowledged } = producer;
    const old = set.primary;
    try {
      await waitFor(() => handledIds.size >= 200, '200 entries handled before the kill', { timeout: 20_000 });
      // What the replica holds just before the kill (it can only hold more at the kill itself).
      const replica = set.replica.client();
      const onReplica = ((await replica.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id);
      replica.disconnect();
      const acknowledgedBeforeKill = [...acknowledged.values()];
      await old.kill();
      const killedAt = Date.now();
      const promoted = await set.waitForFailover(old);
      const failoverMs = Date.now() - killedAt;
      expect(promoted).toBe(set.replica);
      // The producer goes on by itself: 200 more acknowledged emits after the failover.
      const afterFailover = acknowledged.size;
      await waitFor(() => acknowledged.size >= afterFailover + 200, '200 emits acknowledged after the failover', { timeout: 20_000 });
      await producer.stop();

      // What the new primary holds: what it had as a replica, and what was written to it since.
      const redis = promoted.client();
      const present = new Set(((await redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id));
      expect(onReplica.length).toBeGreaterThan(0);
      expect(onReplica.filter((id) => !present.has(id))).toEqual([]);
      // Acknowledged by the old primary before the kill and never replicated: Redis' loss, counted.
      const lost = acknowledgedBeforeKill.filter((id) => !present.has(id));
      const lostUnhandled = () => lost.filter((id) => !handledIds.has(id)).length;
      // Everything the promoted replica holds (acknowledged before the kill, or after the
      // failover) is handled or dead-lettered by the worker, which followed by itself.
      const mustBeSeen = [...new Set([...onReplica, ...acknowledged.values()])].filter((id) => present.has(id));
      const deadLettered = async (): Promise<Set<string>> => new Set(((await redis.xrange(`{${stream}}:dead`, '-', '+')) as [string, string[]][]).map(([, fields]) => fields[fields.indexOf('dlq:id') + 1] as string));
      let unseen: string[] = mustBeSeen;
      await waitFor(
        async () => {
          const dead = await deadLettered();
          unseen = mustBeSeen.filter((id) => !handledIds.has(id) && !dead.has(id));
          return unseen.length === 0;
        },
        'every entry of the promoted replica handled or dead-lettered',
        { timeout: 30_000, interval: 100 },
      ).catch(async (error: unknown) => {
        // Say what was missing and where the worker stood, for the next person who sees it fail.
        const pending = await redis.xpending(stream, 'sfo').catch((failure: unknown) => String(failure));
        throw new Error(
          `${(error as Error).message}; not seen: ${JSON.stringify(unseen.slice(0, 20))} (${unseen.length}); pending on the new primary: ${JSON.stringify(pending)}; worker: ${JSON.stringify(server.liveness())}`,
        );
      });
      await waitFor(async () => ((await redis.xpending(stream, 'sfo')) as [number])[0] === 0, 'no entry pending', { timeout: 30_000 });
      const dead = (await deadLettered()).size;
      redis.disconnect();
      console.log(
        `sentinel failover in ${failoverMs} ms: ${acknowledged.size} emits acknowledged (${acknowledgedBeforeKill.length} before the kill, ${onReplica.length} on the replica just before), ` +
          `${producer.failures.length} failed during the failover, ${lost.length} acknowledged and lost by asynchronous replication (${lostUnhandled()} of them never handled), ${handledIds.size} handled, ${dead} dead-lettered`,
      );
      // Entries acknowledged after the failover were written to the new primary: none may be lost.
      expect([...acknowledged].filter(([n, id]) => n >= afterFailover && !present.has(id))).toEqual([]);
    } finally {
      await producer.stop();
      await client.close();
      await server.close();
    }
  });
});

describe('failover through sentinels: SENTINEL FAILOVER while the old primary lives', () => {
  const harness = useRedisSentinel();

  it('producer and worker leave the old primary on the sentinels\' +switch-master, before the sentinels demote it; nothing written after that is lost', async () => {
    const set = harness.set;
    const stream = 'smf';
    const connection = set.url;
    const handled = new Set<number>();
    const server = new RedisStreamsServer({ connection, group: 'smf', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    server.on('error', () => undefined);
    server.addHandler(stream, async (n: number) => void handled.add(n), true);
    expect(await new Promise<unknown>((resolve) => void server.listen(resolve))).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 1_000 });
    client.on('error', () => undefined);

    const producer = startCountedProducer(client, stream, 50);
    const { acknowledged } = producer;
    const old = set.primary;
    try {
      await waitFor(() => handled.size >= 200, '200 entries handled before the failover', { timeout: 20_000 });
      const sentinel = set.sentinels[0]!.client();
      await sentinel.connect();
      await sentinel.call('SENTINEL', 'FAILOVER', set.name);
      sentinel.disconnect();
      const promoted = await set.waitForFailover(old);
      // The transport's connections move to the new primary by themselves...
      await waitFor(
        async () => (await transportConnections(old)).length === 0 && (await transportConnections(promoted)).length >= 3,
        'the server and the client to leave the old primary for the new one',
        { timeout: 10_000, interval: 50 },
      );
      // ...because the sentinels announced the switch, not because they demoted the old primary
      // (which they do 8 s or more later, killing its clients): until then it takes writes that
      // will be thrown away.
      const oldRole = old.client();
      expect(await oldRole.info('replication')).toContain('role:master');
      oldRole.disconnect();
      const moved = acknowledged.size;
      await waitFor(() => acknowledged.size >= moved + 200, '200 emits acknowledged after the move', { timeout: 20_000 });
      await producer.stop();

      const redis = promoted.client();
      const present = new Set(((await redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id));
      const lost = [...acknowledged].filter(([, id]) => !present.has(id)).map(([n]) => n);
      const survived = [...acknowledged].filter(([, id]) => present.has(id)).map(([n]) => n);
      await waitFor(() => survived.every((n) => handled.has(n)), 'every entry of the new primary handled', { timeout: 30_000 });
      await waitFor(async () => ((await redis.xpending(stream, 'smf')) as [number])[0] === 0, 'no entry pending', { timeout: 30_000 });
      redis.disconnect();
      console.log(
        `SENTINEL FAILOVER: ${acknowledged.size} emits acknowledged, ${producer.failures.length} failed, ${lost.length} acknowledged by the old primary ` +
          `between the promotion and +switch-master and lost, ${handled.size} handled`,
      );
      // Written once no transport connection was left on the old primary: on the new one.
      expect(lost.filter((n) => n >= moved)).toEqual([]);
    } finally {
      await producer.stop();
      await client.close();
      await server.close();
    }
  }, 120_000);
});
