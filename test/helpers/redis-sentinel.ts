import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { freePort, RedisServerProcess, redisServerEnv, type RedisServerTls } from './redis-server.js';
import { waitFor } from './wait.js';

/** How long the harness' sentinels wait before they call a silent primary down. */
export const DOWN_AFTER_MS = 1_000;
const FAILOVER_TIMEOUT_MS = 3_000;

export interface RedisSentinelOptions {
  /** Name the sentinels monitor (default `mymaster`). */
  name?: string;
  /** `requirepass` and `masterauth` of the primary and the replica (the sentinels' `auth-pass`). */
  password?: string;
  /** `requirepass` of the sentinels. */
  sentinelPassword?: string;
  /**
   * TLS only, everywhere: data nodes and sentinels serve TLS (`port 0`), replication and the
   * sentinels' own links use it (`tls-replication yes`). See `supportsTls()` first.
   */
  tls?: RedisServerTls;
}

/** A sentinel of a set as its peers' configs name it: port and run id (`sentinel myid`). */
interface SentinelPeer {
  port: number;
  id: string;
}

const running = new Set<SentinelProcess>();
process.once('exit', () => {
  for (const sentinel of running) sentinel.killNow();
});

/** One `redis-server <config> --sentinel` on a free loopback port, with its own (rewritable) config file. */
export class SentinelProcess {
  private child?: ChildProcess;
  private stopped = false;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nrs-sentinel-'));

  private constructor(
    readonly port: number,
    private readonly password: string | undefined,
    private readonly tls: boolean,
  ) {}

  /**
   * `peers`: the set's sentinels, this one included (`self`), written into its config as known
   * (`sentinel myid`, `known-sentinel`, `known-replica`): sentinels find each other by hellos
   * published every 2 s, which made each set wait ~2 s more to be ready. A sentinel that had to
   * take another port than its peer's is still found by hello, but its peers then count a stale
   * one too: the set resets them (RedisSentinelSet.start).
   */
  static async start(
    primaryPort: number,
    options: Required<Pick<RedisSentinelOptions, 'name'>> & RedisSentinelOptions,
    known: { peers: SentinelPeer[]; self: number; replicaPort: number },
  ): Promise<SentinelProcess> {
    for (let attempt = 0; ; attempt++) {
      const sentinel = new SentinelProcess(attempt === 0 ? known.peers[known.self]!.port : await freePort(), options.sentinelPassword, options.tls !== undefined);
      try {
        await sentinel.launch(primaryPort, options, known);
        return sentinel;
      } catch (error) {
        sentinel.killNow();
        rmSync(sentinel.dir, { recursive: true, force: true });
        // Another process may grab the port between probe and bind; try a new one.
        if (attempt >= 4) throw error;
      }
    }
  }

  get alive(): boolean {
    const child = this.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** True between pause() and resume(): the process lives but answers nothing. */
  get paused(): boolean {
    return this.stopped;
  }

  /**
   * SIGSTOP: a frozen sentinel. The kernel still accepts connections to its port, but it
   * answers no command and takes no part in a failover (the others still have a quorum of 2).
   */
  pause(): void {
    if (!this.alive || this.stopped) return;
    this.child?.kill('SIGSTOP');
    this.stopped = true;
  }

  /** SIGCONT: the sentinel answers again (what was sent to it meanwhile, first). */
  resume(): void {
    if (!this.alive || !this.stopped) return;
    this.child?.kill('SIGCONT');
    this.stopped = false;
  }

  /** A plain connection to this sentinel (SENTINEL commands); the caller closes it. */
  client(): Redis {
    const redis = new Redis({
      host: '127.0.0.1',
      port: this.port,
      password: this.password,
      tls: this.tls ? { rejectUnauthorized: false } : undefined,
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    redis.on('error', () => undefined);
    return redis;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && this.alive) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    running.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }

  killNow(): void {
    try {
      this.child?.kill('SIGKILL');
    } catch {
      // already gone
    }
  }

  private launch(
    primaryPort: number,
    options: Required<Pick<RedisSentinelOptions, 'name'>> & RedisSentinelOptions,
    { peers, self, replicaPort }: { peers: SentinelPeer[]; self: number; replicaPort: number },
  ): Promise<void> {
    const { name } = options;
    const others = peers.filter((_, index) => index !== self);
    const config = join(this.dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        ...(options.tls === undefined
          ? [`port ${this.port}`]
          : [
              'port 0',
              `tls-port ${this.port}`,
              `tls-cert-file ${options.tls.certFile}`,
              `tls-key-file ${options.tls.keyFile}`,
              `tls-ca-cert-file ${options.tls.caFile}`,
              'tls-auth-clients no',
              'tls-replication yes',
            ]),
        'bind 127.0.0.1',
        'protected-mode no',
        'daemonize no',
        `dir ${this.dir}`,
        'loglevel warning',
        ...(options.sentinelPassword === undefined ? [] : [`requirepass ${options.sentinelPassword}`]),
        `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${name} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${name} ${FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${name} 1`,
        ...(options.password === undefined ? [] : [`sentinel auth-pass ${name} ${options.password}`]),
        // Sentinels talk to each other with this password when they have one.
        ...(options.sentinelPassword === undefined ? [] : [`sentinel sentinel-pass ${options.sentinelPassword}`]),
        `sentinel myid ${peers[self]!.id}`,
        `sentinel known-replica ${name} 127.0.0.1 ${replicaPort}`,
        ...others.map((peer) => `sentinel known-sentinel ${name} 127.0.0.1 ${peer.port} ${peer.id}`),
        '',
      ].join('\n'),
    );
    const child = spawn(sentinelServerBinary(), [config, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'], env: redisServerEnv() });
    this.child = child;
    running.add(this);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`sentinel on port ${this.port} exited with ${code}: ${output.trim()}`)));
      child.once('error', (error) => reject(error));
      waitFor(
        async () => {
          const redis = this.client();
          try {
            await redis.connect();
            return (await redis.ping()) === 'PONG';
          } catch {
            return false;
          } finally {
            redis.disconnect();
          }
        },
        `sentinel on port ${this.port} to answer`,
        { timeout: 10_000, interval: 50 },
      ).then(() => {
        child.removeAllListeners('exit');
        resolve();
      }, reject);
    });
  }
}

/**
 * A primary, one replica and three sentinels (quorum 2) on free loopback ports, each sentinel
 * with a generated config file and small `down-after-milliseconds` / `failover-timeout`, so a
 * killed primary is replaced within a few seconds. Waited for until every sentinel knows the
 * replica and the two other sentinels (a failover needs them to agree).
 */
export class RedisSentinelSet {
  private constructor(
    readonly primary: RedisServerProcess,
    readonly replica: RedisServerProcess,
    readonly sentinels: SentinelProcess[],
    readonly options: Required<Pick<RedisSentinelOptions, 'name'>> & RedisSentinelOptions,
  ) {}

  static async start(given: RedisSentinelOptions = {}): Promise<RedisSentinelSet> {
    const options = { name: 'mymaster', ...given };
    const auth = [
      ...(options.password === undefined ? [] : ['--masterauth', options.password]),
      ...(options.tls === undefined ? [] : ['--tls-replication', 'yes']),
    ];
    const tls = options.tls;
    const started: { stop(): Promise<void> }[] = [];
    try {
      const primary = await RedisServerProcess.start({ password: options.password, tls, args: auth });
      started.push(primary);
      const replica = await RedisServerProcess.start({ password: options.password, tls, args: [...auth, '--replicaof', '127.0.0.1', String(primary.port)] });
      started.push(replica);
      await waitFor(async () => /master_link_status:up/.test(await info(replica, 'replication')), 'the replica to sync with the primary', { timeout: 15_000, interval: 50 });
      const peers = await Promise.all([0, 1, 2].map(async () => ({ port: await freePort(), id: randomBytes(20).toString('hex') })));
      const sentinels = await Promise.all(peers.map((_, self) => SentinelProcess.start(primary.port, options, { peers, self, replicaPort: replica.port })));
      started.push(...sentinels);
      const set = new RedisSentinelSet(primary, replica, sentinels, options);
      // A sentinel on another port than planned: forget the planned peers, find each other by hello.
      if (sentinels.some((sentinel, index) => sentinel.port !== peers[index]!.port)) await set.resetSentinels();
      await set.waitUntilReady();
      return set;
    } catch (error) {
      await Promise.all(started.map((process) => process.stop()));
      throw error;
    }
  }

  get name(): string {
    return this.options.name;
  }

  /** `[{ host, port }]` of the sentinels: ioredis' `sentinels` option. */
  get addresses(): { host: string; port: number }[] {
    return this.sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port }));
  }

  /** `redis+sentinel://[:password@]127.0.0.1:p1,…/name[?sentinelPassword=…]` (`rediss+sentinel` with TLS). */
  get url(): string {
    const { password, sentinelPassword, tls } = this.options;
    const userinfo = password === undefined ? '' : `:${encodeURIComponent(password)}@`;
    const query = sentinelPassword === undefined ? '' : `?sentinelPassword=${encodeURIComponent(sentinelPassword)}`;
    return `${tls ? 'rediss' : 'redis'}+sentinel://${userinfo}${this.addresses.map(({ host, port }) => `${host}:${port}`).join(',')}/${this.name}${query}`;
  }

  /** The data node (primary or replica) listening on `port`. */
  node(port: number): RedisServerProcess {
    const node = [this.primary, this.replica].find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no data node of this set listens on ${port}`);
    return node;
  }

  /** The primary the live sentinels name now (they must agree). */
  async currentPrimary(): Promise<RedisServerProcess> {
    const ports = new Set<number>();
    for (const sentinel of this.sentinels) {
      // A paused sentinel would never answer: the live, answering ones must agree.
      if (!sentinel.alive || sentinel.paused) continue;
      const redis = sentinel.client();
      try {
        await redis.connect();
        const [, port] = (await redis.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name)) as [string, string];
        ports.add(Number(port));
      } finally {
        redis.disconnect();
      }
    }
    if (ports.size !== 1) throw new Error(`the sentinels disagree on the primary: ${[...ports].join(', ')}`);
    return this.node([...ports][0] as number);
  }

  /**
   * Resolves once every live sentinel names a primary other than `old`, and that primary says
   * `role:master` (a failover is over for clients only then: they check the role).
   */
  async waitForFailover(old: RedisServerProcess, timeout = 30_000): Promise<RedisServerProcess> {
    let promoted: RedisServerProcess | undefined;
    await waitFor(
      async () => {
        promoted = await this.currentPrimary().catch(() => undefined);
        if (promoted === undefined || promoted === old) return false;
        return /role:master/.test(await info(promoted, 'replication').catch(() => ''));
      },
      `the sentinels to promote a replica in place of port ${old.port}`,
      { timeout, interval: 100 },
    );
    return promoted as RedisServerProcess;
  }

  /** Stops every process and removes its data. */
  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, this.primary, this.replica].map((process) => process.stop()));
  }

  /** SENTINEL RESET on every sentinel: each forgets the replica and the other sentinels, and finds them again. */
  private async resetSentinels(): Promise<void> {
    for (const sentinel of this.sentinels) {
      const redis = sentinel.client();
      try {
        await redis.connect();
        await redis.call('SENTINEL', 'RESET', this.name);
      } finally {
        redis.disconnect();
      }
    }
  }

  /** Every sentinel sees the primary up, knows the replica and the two other sentinels, and is linked to each. */
  private async waitUntilReady(timeout = 20_000): Promise<void> {
    await waitFor(
      async () => {
        for (const sentinel of this.sentinels) {
          const redis = sentinel.client();
          try {
            await redis.connect();
            const fields = (await redis.call('SENTINEL', 'MASTER', this.name)) as string[];
            const master = new Map<string, string>();
            for (let i = 0; i + 1 < fields.length; i += 2) master.set(fields[i] as string, fields[i + 1] as string);
            if (master.get('flags') !== 'master') return false;
            if (master.get('num-slaves') !== '1' || master.get('num-other-sentinels') !== String(this.sentinels.length - 1)) return false;
            // Linked to them, not only told of them (a config names them at once): no `disconnected` flag.
            for (const kind of ['REPLICAS', 'SENTINELS']) {
              const peers = (await redis.call('SENTINEL', kind, this.name)) as string[][];
              if (peers.some((fields) => /\bdisconnected\b/.test(fields[fields.indexOf('flags') + 1] ?? 'disconnected'))) return false;
            }
          } catch {
            return false;
          } finally {
            redis.disconnect();
          }
        }
        return true;
      },
      'the sentinels to know the primary, its replica and each other',
      { timeout, interval: 100 },
    );
  }
}

async function info(node: RedisServerProcess, section: string): Promise<string> {
  const redis = node.client({ lazyConnect: true });
  redis.on('error', () => undefined);
  try {
    return await redis.info(section);
  } finally {
    redis.disconnect();
  }
}

function sentinelServerBinary(): string {
  return process.env.REDIS_SERVER_BIN ?? 'redis-server';
}

/** One sentinel set for a describe block (or a file): started in beforeAll, stopped in afterAll. */
export function useRedisSentinel(options: RedisSentinelOptions = {}): { readonly set: RedisSentinelSet } {
  let set: RedisSentinelSet | undefined;
  beforeAll(async () => {
    set = await RedisSentinelSet.start(options);
  }, 60_000);
  afterAll(async () => {
    await set?.stop();
  });
  return {
    get set() {
      if (!set) throw new Error('useRedisSentinel: the set starts in beforeAll');
      return set;
    },
  };
}
