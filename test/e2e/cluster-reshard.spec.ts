import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { withTimeout } from '../../src/timeout.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { startCountedProducer } from '../helpers/counted-producer.js';
import { waitFor } from '../helpers/wait.js';

// Its own cluster, without replicas (a slot move needs none): this file moves a slot.
const harness = useRedisCluster({ replicas: 0 });

describe('resharding on a real local cluster', () => {
  it('the slot of a consumed stream moves to another master (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE): nothing lost, nothing pending, no restart', async () => {
    const cluster = harness.cluster;
    const stream = 'rs-a';
    const slot = hashSlotOf(stream);
    const connection = { cluster: { nodes: cluster.urls } };
    const handled = new Set<number>();
    let deliveries = 0;
    const server = new RedisStreamsServer({ connection, group: 'rs', blockMs: 100, shutdownTimeout: 500, recovery: { minIdleTime: 500, interval: 200 } });
    const serverErrors: Error[] = [];
    server.on('error', (error: Error) => void serverErrors.push(error));
    server.addHandler(stream, async (n: number) => {
      deliveries++;
      handled.add(n);
    }, true);
    const listened = await new Promise<unknown>((resolve) => void server.listen(resolve));
    expect(listened).toBeUndefined();
    const client = new RedisStreamsClient({ connection, commandTimeout: 2_000 });
    client.on('error', () => undefined);

    const producer = startCountedProducer(client, stream);
    const { acknowledged, failures } = producer;
    // Traffic in every state of the move: 100 more entries handled before the next step.
    const moreHandled = async (state: string) => {
      const target = handled.size + 100;
      await waitFor(() => handled.size >= target, `100 more entries handled while the slot is ${state}`, { timeout: 20_000 });
    };
    try {
      await moreHandled('still on its master');
      const source = await cluster.masterOf(slot);
      const target = (await cluster.masters()).find((master) => master !== source)!;
      await cluster.moveSlot(slot, target, (step) => moreHandled(step === 'migrating' ? 'migrating (key on the source)' : 'migrated (key on the target, slot not yet)'));
      expect(await cluster.masterOf(slot)).toBe(target);
      await moreHandled('on its new master');
      await producer.stop();

      // Every acknowledged emit is on the new master and handled; nothing stays pending.
      const redis = cluster.client();
      const present = new Set(((await redis.xrange(stream, '-', '+')) as [string, string[]][]).map(([id]) => id));
      expect([...acknowledged.values()].filter((id) => !present.has(id))).toEqual([]);
      await waitFor(() => [...acknowledged.keys()].every((n) => handled.has(n)), 'every acknowledged emit handled', { timeout: 30_000 });
      await waitFor(async () => ((await redis.xpending(stream, 'rs')) as [number])[0] === 0, 'no entry pending', { timeout: 30_000 });
      // The source holds nothing of the stream any more.
      const onSource = source.client();
      expect(await onSource.cluster('COUNTKEYSINSLOT', slot)).toBe(0);
      onSource.disconnect();
      redis.disconnect();
      console.log(
        `reshard: ${acknowledged.size} emits acknowledged, ${failures.length} failed (${[...new Set(failures)].join('; ')}), ` +
          `${handled.size} handled in ${deliveries} deliveries, ${serverErrors.length} server errors (${[...new Set(serverErrors.map((e) => e.message))].join('; ')})`,
      );
      // A move is not a failure: no emit fails and no entry is lost.
      expect(failures).toEqual([]);
    } finally {
      await producer.stop();
      await client.close();
      await server.close();
    }
  }, 120_000);

  // ioredis' Cluster re-sent every command of a node connection that closed unanswered
  // ("Connection is closed.", retryDelayOnFailover; auto-pipelined XADDs too). After a master's
  // kill -9 that had run the XADD (and passed it to its replica) with only the reply lost, the
  // promoted replica got it a second time. Here the XADD waits on CLIENT PAUSE WRITE, so Redis
  // drops it with the connection: a re-send is the only way it can be written.
  it('an emit whose node connection closes with its XADD unanswered fails; ioredis does not send it again', async () => {
    const cluster = harness.cluster;
    const stream = 'rs-resend';
    const client = new RedisStreamsClient({ connection: { cluster: { nodes: cluster.urls } }, commandTimeout: 10_000 });
    client.on('error', () => undefined);
    const owner = await cluster.masterOf(hashSlotOf(stream));
    const admin = owner.client();
    try {
      await lastValueFrom(client.emit(stream, 0));
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const emit = lastValueFrom(client.emit(stream, 1)).then(
        () => undefined,
        (error: unknown) => error,
      );
      let clients = '';
      await waitFor(async () => /name=nestjs-redis-streams:client .*cmd=xadd/.test((clients = (await admin.client('LIST')) as string)), 'the XADD to wait on the pause');
      const producer = /^id=(\d+) .* name=nestjs-redis-streams:client /m.exec(clients);
      await admin.client('KILL', 'ID', producer![1]!);
      await admin.call('CLIENT', 'UNPAUSE');
      expect(await emit).toMatchObject({ name: 'RedisStreamsPublishError', stream });
      expect(await admin.xlen(stream)).toBe(1);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await client.close();
    }
  });

  // On a Cluster the client's XADDs are auto-pipelined; a pipeline that gets MOVED is sent again
  // with fresh promises. The timeout guard (src/redis/command-timeout.ts) disarmed its timer when
  // the first promise was rejected and never armed it again: the re-sent XADD had no timeout, and
  // an emit to a master that stopped answering waited for good.
  it('an emit re-sent after MOVED to a master that does not answer still fails within commandTimeout', async () => {
    const cluster = harness.cluster;
    const stream = 'rs-moved';
    const slot = hashSlotOf(stream);
    const client = new RedisStreamsClient({ connection: { cluster: { nodes: cluster.urls } }, commandTimeout: 1_000 });
    client.on('error', () => undefined);
    const owner = await cluster.masterOf(slot);
    const target = (await cluster.masters()).find((master) => master !== owner)!;
    const admin = target.client();
    try {
      // The client learns the slot map, then the slot moves behind its back: its next XADD gets MOVED.
      await lastValueFrom(client.emit(stream, 0));
      await cluster.moveSlot(slot, target);
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const emit = lastValueFrom(client.emit(stream, 1)).then(
        () => undefined,
        (error: unknown) => error,
      );
      // Bounded here by 15 s (commandTimeout is 1 s): without the fix it never settled.
      expect(await withTimeout(emit, 15_000, 'the emit re-sent after MOVED')).toMatchObject({ name: 'RedisStreamsPublishError', stream });
      // The XADD did reach the new master: it waits there on the pause.
      expect((await admin.client('LIST')) as string).toMatch(/name=nestjs-redis-streams:client .*cmd=xadd/);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await client.close();
    }
  });
});
