import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisServerProcess } from './redis-server.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

/** Node timeout of the harness clusters: a dead master is failed over within a few seconds. */
export const CLUSTER_NODE_TIMEOUT_MS = 1_000;

export interface RedisClusterOptions {
  /** Masters (default 3); each gets `replicas` replicas (default 1). */
  masters?: number;
  replicas?: number;
  /** `requirepass` and `masterauth` of every node. */
  password?: string;
}

/**
 * A private Redis Cluster of `redis-server --cluster-enabled yes` processes on free loopback
 * ports, created with `redis-cli --cluster create` and waited for until every node says
 * `cluster_state:ok` and knows every replica. Nodes can be killed and restarted (a restarted
 * node keeps its nodes.conf and rejoins).
 */
export class RedisClusterProcess {
  private constructor(
    readonly nodes: RedisServerProcess[],
    private readonly options: RedisClusterOptions,
  ) {}

  static async start(options: RedisClusterOptions = {}): Promise<RedisClusterProcess> {
    const masters = options.masters ?? 3;
    const replicas = options.replicas ?? 1;
    const args = [
      '--cluster-enabled', 'yes',
      '--cluster-node-timeout', String(CLUSTER_NODE_TIMEOUT_MS),
      // A replica fails over however long it was cut off: a test kills masters on purpose.
      '--cluster-replica-validity-factor', '0',
      ...(options.password === undefined ? [] : ['--masterauth', options.password]),
    ];
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () => RedisServerProcess.start({ args, password: options.password })),
    );
    const cluster = new RedisClusterProcess(nodes, options);
    try {
      await cluster.create(replicas);
      await cluster.waitUntilHealthy();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** `redis://127.0.0.1:port` of every node. */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  get startupNodes(): { host: string; port: number }[] {
    return this.nodes.map((node) => ({ host: '127.0.0.1', port: node.port }));
  }

  /** A new ioredis Cluster on these nodes; the caller closes it. */
  client(options: { lazyConnect?: boolean } = {}): Cluster {
    const cluster = new Cluster(this.startupNodes, { redisOptions: { password: this.options.password }, ...options });
    // Tests stop the cluster under clients they may still hold: no unhandled error events.
    cluster.on('error', () => undefined);
    return cluster;
  }

  /** A plain connection to one node (no redirections followed); the caller closes it. */
  nodeClient(node: RedisServerProcess): Redis {
    return node.client();
  }

  /** The node process serving `port`. */
  node(port: number): RedisServerProcess {
    const node = this.nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no node of this cluster listens on ${port}`);
    return node;
  }

  /** The master serving `slot` now (asked of a live node). */
  async masterOf(slot: number): Promise<RedisServerProcess> {
    const slots = await this.withLiveNode((redis) => slotsOf(redis));
    for (const [from, to, master] of slots) if (slot >= from && slot <= to && master) return this.node(Number(master[1]));
    throw new Error(`no master serves slot ${slot}`);
  }

  /** The nodes that are masters now. */
  async masters(): Promise<RedisServerProcess[]> {
    const ports = new Set<number>();
    const slots = await this.withLiveNode((redis) => slotsOf(redis));
    for (const [, , master] of slots) if (master) ports.add(Number(master[1]));
    return [...ports].map((port) => this.node(port));
  }

  /**
   * Moves `slot` from its master to `target` the way `redis-cli --cluster reshard` does, one step
   * at a time so a test can let traffic run in each state: `target` IMPORTING, the owner
   * MIGRATING (keys still on the owner; new keys ASK-redirected), `MIGRATE` of every key (the
   * owner ASK-redirects them all), then `SETSLOT NODE` on the target, the owner and every other
   * master (MOVED from then on). `between(step)` runs after each of the first three steps.
   */
  async moveSlot(slot: number, target: RedisServerProcess, between: (step: 'migrating' | 'migrated') => Promise<void> = async () => undefined): Promise<void> {
    const source = await this.masterOf(slot);
    if (source === target) throw new Error(`slot ${slot} is already served by port ${target.port}`);
    const withNode = async <T>(node: RedisServerProcess, work: (redis: Redis) => Promise<T>): Promise<T> => {
      const redis = node.client({ lazyConnect: true });
      redis.on('error', () => undefined);
      try {
        return await work(redis);
      } finally {
        redis.disconnect();
      }
    };
    const idOf = (node: RedisServerProcess) => withNode(node, async (redis) => (await redis.cluster('MYID')) as string);
    const [sourceId, targetId] = [await idOf(source), await idOf(target)];
    await withNode(target, (redis) => redis.cluster('SETSLOT', slot, 'IMPORTING', sourceId));
    await withNode(source, (redis) => redis.cluster('SETSLOT', slot, 'MIGRATING', targetId));
    await between('migrating');
    await withNode(source, async (redis) => {
      for (;;) {
        const keys = (await redis.cluster('GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) return;
        const auth = this.options.password === undefined ? [] : ['AUTH', this.options.password];
        await redis.call('MIGRATE', '127.0.0.1', String(target.port), '', '0', '10000', ...auth, 'KEYS', ...keys);
      }
    });
    await between('migrated');
    await withNode(target, (redis) => redis.cluster('SETSLOT', slot, 'NODE', targetId));
    await withNode(source, (redis) => redis.cluster('SETSLOT', slot, 'NODE', targetId));
    for (const master of await this.masters()) {
      if (master !== source && master !== target) await withNode(master, (redis) => redis.cluster('SETSLOT', slot, 'NODE', targetId));
    }
    await this.waitUntilHealthy();
  }

  /** Resolves once every live node says `cluster_state:ok` and agrees on who serves every slot. */
  async waitUntilHealthy(timeout = 30_000): Promise<void> {
    await waitFor(
      async () => {
        const views: string[] = [];
        for (const node of this.nodes) {
          if (node.pid === undefined || !node.alive) continue;
          const redis = node.client({ lazyConnect: true });
          redis.on('error', () => undefined);
          try {
            const info = (await redis.cluster('INFO')) as string;
            if (!info.includes('cluster_state:ok')) return false;
            const slots = await slotsOf(redis);
            const covered = slots.reduce((sum, [from, to]) => sum + (to - from + 1), 0);
            if (covered !== 16_384) return false;
            views.push(
              JSON.stringify(
                slots.map(([from, to, ...hosts]) => [from, to, hosts.map(([, port]) => port).sort()]).sort((a, b) => Number(a[0]) - Number(b[0])),
              ),
            );
          } catch {
            return false;
          } finally {
            redis.disconnect();
          }
        }
        return views.length > 0 && views.every((view) => view === views[0]);
      },
      'the cluster to be healthy (cluster_state:ok, one view of the slots on every node)',
      { timeout, interval: 100 },
    );
  }

  /** Stops every node and removes its data. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  private async create(replicas: number): Promise<void> {
    const cli = redisCliBinary();
    const auth = this.options.password === undefined ? [] : ['-a', this.options.password, '--no-auth-warning'];
    await run(cli, [...auth, '--cluster', 'create', ...this.nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'], {
      timeout: 30_000,
    });
  }

  private async withLiveNode<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (const node of this.nodes) {
      if (!node.alive) continue;
      const redis = node.client({ lazyConnect: true });
      redis.on('error', () => undefined);
      try {
        return await work(redis);
      } catch (error) {
        lastError = error;
      } finally {
        redis.disconnect();
      }
    }
    throw lastError ?? new Error('no node of the cluster is alive');
  }
}

type SlotRange = [from: number, to: number, ...nodes: [host: string, port: number][]];

async function slotsOf(redis: Redis): Promise<SlotRange[]> {
  return (await redis.cluster('SLOTS')) as unknown as SlotRange[];
}

/** `redis-cli` (or Valkey's `valkey-cli`) next to `REDIS_SERVER_BIN` when it is set, else the PATH's `redis-cli`. */
export function redisCliBinary(): string {
  const server = process.env.REDIS_SERVER_BIN;
  if (server !== undefined) {
    const beside = server.replace(/(redis|valkey)-server$/, '$1-cli');
    if (beside !== server && existsSync(beside)) return beside;
  }
  return 'redis-cli';
}

/** One cluster for a describe block (or a file): started in beforeAll, stopped in afterAll. */
export function useRedisCluster(options: RedisClusterOptions = {}): { readonly cluster: RedisClusterProcess } {
  let cluster: RedisClusterProcess | undefined;
  beforeAll(async () => {
    cluster = await RedisClusterProcess.start(options);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (!cluster) throw new Error('useRedisCluster: the cluster starts in beforeAll');
      return cluster;
    },
  };
}
