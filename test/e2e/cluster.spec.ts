import { spawn } from 'node:child_process';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { Cluster } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { createCluster } from '../../src/redis/cluster-connection.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { waitFor } from '../helpers/wait.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';

@Controller()
class EchoController {
  @MessagePattern('{ha}:echo')
  echo(@Payload() value: unknown) {
    return value;
  }
}

@Module({ controllers: [EchoController] })
class EchoModule {}

/** Three streams whose slots the harness' cluster gives to three different masters. */
const SPREAD = ['orders', 'payments', 'beta'] as const;
const handled: Record<string, number[]> = { orders: [], payments: [], beta: [] };

@Controller()
class SpreadController {
  @EventPattern('orders', { maxDeliveries: 1 })
  orders(@Payload() n: number) {
    if (n < 0) throw new Error('poison');
    handled.orders!.push(n);
  }

  @EventPattern('payments')
  payments(@Payload() n: number) {
    handled.payments!.push(n);
  }

  @EventPattern('beta')
  beta(@Payload() n: number) {
    handled.beta!.push(n);
  }
}

@Module({ controllers: [SpreadController] })
class SpreadModule {}

// One cluster for the whole file: starting one costs seconds.
const harness = useRedisCluster();

describe('RedisStreamsClient on a Cluster instance', () => {
  const closers: (() => unknown)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });
  const clusterClient = (lazyConnect: boolean): Cluster => {
    const cluster = harness.cluster.client({ lazyConnect });
    closers.push(() => cluster.disconnect());
    return cluster;
  };
  const streamsClient = (connection: Cluster): RedisStreamsClient => {
    const client = new RedisStreamsClient({ connection, commandTimeout: 5_000 });
    closers.push(() => client.close());
    return client;
  };

  it.each([
    ['connecting (new Cluster(nodes))', async () => clusterClient(false)],
    ['lazy ({ lazyConnect: true })', async () => clusterClient(true)],
    [
      'ready',
      async () => {
        const cluster = clusterClient(false);
        await new Promise((resolve) => cluster.once('ready', resolve));
        return cluster;
      },
    ],
  ])('emits issued at once on a %s Cluster all succeed', async (_, make) => {
    const cluster = await make();
    const client = streamsClient(cluster);
    const stream = `emits-${Math.random().toString(36).slice(2)}`;
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => lastValueFrom(client.emit(stream, { i }))));
    expect(ids.every((id) => typeof id === 'string')).toBe(true);
    const check = harness.cluster.client();
    try {
      expect(await check.xlen(stream)).toBe(6);
    } finally {
      check.disconnect();
    }
  });

  describe('send() on a connecting Cluster', () => {
    let app: INestMicroservice;
    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({ imports: [EchoModule] }).compile();
      app = moduleRef.createNestMicroservice({
        strategy: new RedisStreamsServer({ connection: harness.cluster.client(), group: 'echo', blockMs: 100, shutdownTimeout: 500 }),
      });
      await app.listen();
    });
    afterAll(async () => {
      await app?.close();
    });

    it('the first requests wait for the cluster and get their replies', async () => {
      const client = streamsClient(clusterClient(false));
      const replies = await Promise.all([1, 2, 3].map((n) => lastValueFrom(client.send('{ha}:echo', n))));
      expect(replies).toEqual([1, 2, 3]);
    });
  });
});

describe('a Cluster from configuration: { cluster: { nodes, options } }', () => {
  const connection = (): RedisConnection => ({ cluster: { nodes: harness.cluster.urls.slice(0, 2) } });

  it('a password and TLS in the node URLs apply to every node; options.redisOptions wins', () => {
    const cluster = createCluster(
      { cluster: { nodes: ['rediss://:urlPW@127.0.0.1:7000', 'rediss://127.0.0.1:7001'], options: { natMap: { 'a:1': { host: 'b', port: 2 } } } } },
      {},
      'nestjs-redis-streams:test',
    );
    expect(cluster.options.redisOptions).toMatchObject({ password: 'urlPW', tls: {}, connectionName: 'nestjs-redis-streams:test' });
    expect(cluster.options.natMap).toEqual({ 'a:1': { host: 'b', port: 2 } });
    expect(cluster.status).toBe('wait');
    const overridden = createCluster({ cluster: { nodes: ['redis://:urlPW@127.0.0.1:7000'], options: { redisOptions: { password: 'mine' } } } }, {}, 'n');
    expect(overridden.options.redisOptions?.password).toBe('mine');
  });

  it('server, client and the module services work on streams of every master', async () => {
    expect(new Set(await Promise.all(SPREAD.map(async (stream) => (await harness.cluster.masterOf(hashSlotOf(stream))).port))).size).toBe(3);
    const moduleRef = await Test.createTestingModule({
      imports: [SpreadModule, RedisStreamsModule.forRoot({ connection: connection() })],
    }).compile();
    const app = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({
        connection: connection(),
        group: 'spread',
        blockMs: 100,
        shutdownTimeout: 500,
        recovery: { minIdleTime: 200, interval: 100 },
      }),
    });
    const client = new RedisStreamsClient({ connection: connection() });
    try {
      await app.listen();
      const sent = Array.from({ length: 10 }, (_, i) => i);
      await Promise.all(SPREAD.flatMap((stream) => sent.map((n) => lastValueFrom(client.emit(stream, n)))));
      await lastValueFrom(client.emit('orders', -1));
      const deadLetters = moduleRef.get(DeadLetterService);
      await waitFor(
        async () => SPREAD.every((stream) => handled[stream]!.length === 10) && (await deadLetters.size('orders')) === 1,
        'every entry handled and the poison one dead-lettered',
      );
      for (const stream of SPREAD) expect([...handled[stream]!].sort((a, b) => a - b)).toEqual(sent);
      const page = await deadLetters.list('orders');
      expect(page.deadLetters.map((d) => d.fields.data)).toEqual(['-1']);
    } finally {
      await client.close();
      await app.close();
      await moduleRef.close();
    }
  });
});

describe('the CLI on a Cluster, given the URL of any node', () => {
  const CLI = 'build/src/cli/main.js';
  beforeAll(() => ensureCompiled(), 120_000);

  const cli = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  // Sixteen CLI processes: slow on a busy machine, hence the long bound.
  it('info, pending, claim, ack and dlq list answer for keys on every master, from a node that owns none of them', { timeout: 120_000 }, async () => {
    const redis = harness.cluster.client();
    const service = new DeadLetterService(redis);
    try {
      const keys = ['alpha', 'cfg-a', 'users'];
      const owners = new Set<number>();
      for (const key of keys) {
        owners.add((await harness.cluster.masterOf(hashSlotOf(key))).port);
        await redis.xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
        const ids = [await redis.xadd(key, '*', 'n', '1'), await redis.xadd(key, '*', 'n', '2')];
        await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', key, '>');
        await service.moveToDeadLetter({ stream: key, group: 'g', ids: [ids[1] as string], reason: 'test', error: 'boom' });
      }
      expect(owners.size).toBe(3);
      // A replica's URL: it owns no slot at all.
      const masters = new Set((await harness.cluster.masters()).map((node) => node.port));
      const replica = harness.cluster.nodes.find((node) => !masters.has(node.port))!;
      // One key per master, checked side by side (each CLI run is a node process start).
      const checkKey = async (key: string) => {
        const info = await cli(['info', key, '--url', replica.url, '--json']);
        expect(info.stderr).toBe('');
        expect(JSON.parse(info.stdout)).toMatchObject({ key, stream: { length: 2 }, groups: [{ name: 'g', pending: 1 }] });
        const pending = await cli(['pending', key, 'g', '--url', replica.url]);
        expect(JSON.parse(pending.stdout)).toMatchObject({ count: 1 });
        const claimed = await cli(['claim', key, 'g', 'c2', '--min-idle-time', '1', '--url', replica.url]);
        expect(claimed.stderr).toBe('');
        const claim = JSON.parse(claimed.stdout) as { ids: string[] };
        expect(claim.ids).toHaveLength(1);
        const acked = await cli(['ack', key, 'g', ...claim.ids, '--url', replica.url]);
        expect(JSON.parse(acked.stdout)).toMatchObject({ acknowledged: 1 });
        const dlq = await cli(['dlq', 'list', key, '--url', replica.url]);
        expect((JSON.parse(dlq.stdout) as { deadLetters: unknown[] }).deadLetters).toHaveLength(1);
      };
      await Promise.all(keys.map(checkKey));
      const forced = await cli(['info', 'alpha', '--cluster', '--url', harness.cluster.urls[0]!]);
      expect(JSON.parse(forced.stdout)).toMatchObject({ key: 'alpha', stream: { length: 2 } });
    } finally {
      redis.disconnect();
    }
  });
});

describe('keys one script touches together are checked at listen()', () => {
  it('on a Cluster, a deadLetterKey in another slot is a RedisStreamsOptionError naming the option, before any read', async () => {
    const server = new RedisStreamsServer({
      connection: { cluster: { nodes: harness.cluster.urls } },
      group: 'g',
      recovery: { deadLetterKey: (stream) => `dead:${stream}` },
    });
    server.addHandler('orders', async () => undefined, true);
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    await server.close();
    expect(error).toMatchObject({ name: 'RedisStreamsOptionError', option: 'recovery.deadLetterKey' });
    expect((error as Error).message).toContain('"dead:orders"');
    expect((error as Error).message).toContain('CROSSSLOT');
  });
});

describe('connections a worker opens on a Cluster', () => {
  /** Connections named by the transport on every node, by name. */
  async function transportConnections(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const node of harness.cluster.nodes) {
      const redis = node.client();
      try {
        const list = (await redis.client('LIST')) as string;
        for (const name of list.matchAll(/ name=(nestjs-redis-streams:\S+)/g)) counts[name[1]!] = (counts[name[1]!] ?? 0) + 1;
      } finally {
        redis.disconnect();
      }
    }
    return counts;
  }

  it('one reader connection per group and hash slot, the command connection once per master', async () => {
    // 6 streams in 6 slots (2 per master) and 3 sharing the hash tag {app}: 7 slots in all.
    const spread = ['cnt-0', 'cnt-1', 'cnt-2', 'cnt-4', 'cnt-5', 'cnt-6'];
    const tagged = ['{cnt}:a', '{cnt}:b', '{cnt}:c'];
    expect(new Set(await Promise.all(spread.map(async (stream) => (await harness.cluster.masterOf(hashSlotOf(stream))).port))).size).toBe(3);
    const handled = new Set<string>();
    // One startup node: every replica listed as a startup node gets an idle connection from each
    // ioredis Cluster (it sends READONLY when it learns the node's role), see docs/high-availability.md.
    const connection = { cluster: { nodes: [(await harness.cluster.masters())[0]!.url] } };
    const server = new RedisStreamsServer({ connection, group: 'count', blockMs: 100, shutdownTimeout: 500 });
    for (const stream of [...spread, ...tagged]) server.addHandler(stream, async (data: unknown) => void handled.add(`${stream}:${String(data)}`), true);
    const client = new RedisStreamsClient({ connection: { cluster: { nodes: harness.cluster.urls } } });
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    try {
      expect(error).toBeUndefined();
      // The delayed wake-up: its Cluster client's one node connection (ioredis' subscriber connection beside it is named ioredis-cluster(subscriber)).
      const expected = { 'nestjs-redis-streams:server': 3, 'nestjs-redis-streams:server-reader:count': 7, 'nestjs-redis-streams:server-delayed-wake': 1 };
      const counted = async () => JSON.stringify(Object.entries(await transportConnections()).sort()) === JSON.stringify(Object.entries(expected).sort());
      await waitFor(counted, 'one reader per slot, commands once per master, one wake-up connection');
      // Every reader reads: one entry per stream is handled, and no connection was added meanwhile.
      await Promise.all([...spread, ...tagged].map((stream) => lastValueFrom(client.emit(stream, 1))));
      await waitFor(() => handled.size === 9, 'an entry of every stream handled');
      await client.close();
      expect(await transportConnections()).toEqual(expected);
      const masters = new Set((await harness.cluster.masters()).map((node) => node.port));
      for (const node of harness.cluster.nodes.filter((candidate) => !masters.has(candidate.port))) {
        const redis = node.client();
        expect((await redis.client('LIST')) as string).not.toContain('name=nestjs-redis-streams:');
        redis.disconnect();
      }
    } finally {
      await client.close();
      await server.close();
    }
  });
});
