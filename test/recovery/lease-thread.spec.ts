import { Controller, Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join, resolve } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { setLeaseThreadScript } from '../../src/recovery/lease-thread-handle.js';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { compiledPath, ensureCompiled } from '../helpers/compiled.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { RedisServerProcess, supportsTls } from '../helpers/redis-server.js';
import { RedisClusterProcess } from '../helpers/redis-cluster.js';
import { RedisSentinelSet } from '../helpers/redis-sentinel.js';
import { createTestCertificates, type TestCertificates } from '../helpers/tls-certificates.js';
import { blockEventLoop } from '../helpers/block-event-loop.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The lease thread in this process (the compiled build/ thread: the sources have none to run): a
 * watchdog that sends nothing while the event loop is live (the main thread renews), renews from
 * its own connection while a handler blocks the loop, close() right after such a block, and
 * renewals on the event loop only when the thread cannot run.
 */
const LEASE_NAME = 'nestjs-redis-streams:lease-renewal';
/** What the thread's renewal rounds send (XPENDING of this consumer, then the claim-if-owned script). */
const RENEWAL_COMMANDS = ['xpending', 'evalsha', 'eval'];
/** The heartbeat is stamped every 50 ms and stale after 150 ms: a loaded machine's stalls seldom reach that. */
const LEASE_INTERVAL = 200;
let release: (() => void) | undefined;
let started = 0;
/** How long the next handler blocks the event loop (synchronously) before it waits for `release`. */
let blockMs = 0;

@Controller()
class SlowController {
  @EventPattern('lease-thread.slow')
  async slow(_data: unknown): Promise<void> {
    started++;
    if (blockMs > 0) blockEventLoop(blockMs);
    await new Promise<void>((resolve) => (release = resolve));
  }
}

/** Each lease-thread connection on `client`'s server: its last command and the whole seconds since it (CLIENT LIST `cmd`, `idle`). */
async function leaseConnectionStates(client: Redis): Promise<Array<{ cmd: string; idle: number }>> {
  const list = (await client.client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${LEASE_NAME} `))
    .map((line) => ({ cmd: /(?:^|\s)cmd=(\S+)/.exec(line)?.[1] ?? '', idle: Number(/(?:^|\s)idle=(\d+)/.exec(line)?.[1]) }));
}

async function allLeaseConnectionStates(clients: Redis[]): Promise<Array<{ cmd: string; idle: number }>> {
  return (await Promise.all(clients.map(leaseConnectionStates))).flat();
}

/**
 * The thread sent nothing for over a second (`idle` counts whole seconds of the server's clock; a
 * stall of a loaded machine may have woken the thread before).
 */
const quiet = (states: Array<{ idle: number }>) => states.length > 0 && states.every((state) => state.idle >= 2);
/**
 * The thread renewed in the last two seconds: its last command is one of a renewal round. After
 * `quiet` and a block of 1.5 s, a thread that did nothing would show `idle` ≥ 2.
 */
const renewedJustNow = (states: Array<{ cmd: string; idle: number }>) => states.some((state) => state.idle <= 1 && RENEWAL_COMMANDS.includes(state.cmd));

beforeAll(async () => {
  await ensureCompiled();
  setLeaseThreadScript(pathToFileURL(resolve(compiledPath('src/recovery/lease-thread.ts'))));
}, 240_000);
afterAll(() => setLeaseThreadScript(undefined));

async function leaseConnectionsOn(client: Redis): Promise<number> {
  const list = (await client.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${LEASE_NAME} `)).length;
}

/** The age (CLIENT LIST, whole seconds) of each connection this transport opened on `client`'s server. */
async function streamsConnectionAges(client: Redis): Promise<number[]> {
  const list = (await client.client('LIST')) as string;
  return list
    .split('\n')
    .filter((line) => line.includes(' name=nestjs-redis-streams:'))
    .map((line) => Number(/(?:^|\s)age=(\d+)/.exec(line)?.[1]));
}

/** A lease interval at which the thread connects at its first need, not at start, and the minIdleTime it is a third of. */
const LAZY = { minIdleTime: 3_000, leaseInterval: 1_000 } as const;

describe('lease thread in-process (real redis-server, compiled thread)', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;
  const warnings: string[] = [];
  afterEach(async () => {
    release?.();
    blockMs = 0;
    await running?.app.close();
    running = undefined;
    vi.restoreAllMocks();
    warnings.length = 0;
  });

  const leaseConnections = () => leaseConnectionsOn(redis.client);

  async function serve(connection: unknown): Promise<RunningServer> {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    running = await startServer(
      { connection: connection as string, group: 'g', consumer: 'c1', blockMs: 100, streamPrefix: '', recovery: { minIdleTime: 600, leaseInterval: LEASE_INTERVAL } } as never,
      [SlowController],
    );
    return running;
  }

  it('sends nothing while the event loop is live (renewals run there), and renews from its own connection while a handler blocks the loop', async () => {
    await serve(redis.server.url);
    await redis.client.xgroup('CREATE', 'lease-thread.slow', 'g', '0', 'MKSTREAM').catch(() => undefined);
    await waitFor(async () => (await leaseConnections()) === 1, 'the lease thread connected', { timeout: 10_000 });
    started = 0;
    await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {});
    await waitFor(() => started === 1, 'the handler started');
    const renewed = () => new RedisStreamsRecovery().stats({ consumer: 'c1' })[0]?.stats.leasesRenewed ?? 0;
    // Two seconds in which the thread's connection sent nothing (CLIENT LIST idle, in whole seconds) while the event loop renewed.
    let renewedAt = renewed();
    await waitFor(
      async () => {
        const idle = (await leaseConnectionStates(redis.client))[0]?.idle;
        if (idle === 0) renewedAt = renewed();
        return idle >= 2 && renewed() >= renewedAt + 5;
      },
      'two seconds of renewals on the event loop alone',
      { timeout: 20_000, interval: 100 },
    );
    // The next handler blocks the loop for over minIdleTime (600 ms): only the thread can renew meanwhile.
    blockMs = 1_500;
    release?.();
    const blocked = (await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {})) as string;
    await waitFor(() => started === 2, 'the blocking handler ran');
    expect(renewedJustNow(await leaseConnectionStates(redis.client))).toBe(true);
    const rows = await pendingRows(redis.client, 'lease-thread.slow', 'g');
    expect(rows.filter((row) => row.id === blocked).map((row) => [row.consumer, row.deliveries])).toEqual([['c1', 1]]);
    expect(warnings.filter((w) => w.includes('lease'))).toEqual([]);
  });

  it('close() while a handler it waits for blocks the loop and the thread renews: it stops the thread and closes that connection', async () => {
    await serve(redis.server.url);
    await redis.client.xgroup('CREATE', 'lease-thread.slow', 'g', '0', 'MKSTREAM').catch(() => undefined);
    await waitFor(async () => (await leaseConnections()) === 1, 'the lease thread connected', { timeout: 10_000 });
    started = 0;
    const id = (await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {})) as string;
    await waitFor(() => started === 1, 'the handler started');
    await waitFor(async () => quiet(await leaseConnectionStates(redis.client)), 'the thread quiet while the loop is live', { timeout: 15_000, interval: 100 });
    const closing = (running as RunningServer).app.close();
    // close() waits for the handler, which blocks the loop once released: the thread renews meanwhile.
    const handler = release as () => void;
    let afterBlock: Promise<Array<{ cmd: string; idle: number }>> | undefined;
    release = () => {
      blockEventLoop(1_500);
      // Sent before the handler settles, so before close() can stop the thread.
      afterBlock = leaseConnectionStates(redis.client);
      handler();
    };
    setImmediate(() => release?.());
    await closing;
    expect(renewedJustNow(await (afterBlock as Promise<Array<{ cmd: string; idle: number }>>))).toBe(true);
    running = undefined;
    await waitFor(async () => (await leaseConnections()) === 0, 'the lease connection closed', { timeout: 5_000 });
    expect(await pendingRows(redis.client, 'lease-thread.slow', 'g')).toEqual([]);
    expect(await redis.client.xrange('lease-thread.slow', id, id)).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('lease'))).toEqual([]);
  });

  it('close() while Redis does not answer: the thread drops its connection without a QUIT, and close() ends within one QUIT timeout', async () => {
    await serve(redis.server.url);
    await waitFor(async () => (await leaseConnections()) === 1, 'the lease thread connected', { timeout: 10_000 });
    redis.server.pause();
    try {
      const closing = performance.now();
      await (running as RunningServer).app.close();
      running = undefined;
      // The reader's blocked read waits out the one 2 s wait; the thread's QUIT waited 2 s more (4 s).
      expect(performance.now() - closing).toBeLessThan(3_500);
    } finally {
      redis.server.resume();
    }
    await waitFor(async () => (await leaseConnections()) === 0, 'the lease connection closed', { timeout: 5_000 });
    expect(warnings.filter((w) => w.includes('lease'))).toEqual([]);
  });

  it('lazy connect: no connection while entries are short; one in flight for a lease interval makes the thread connect while the loop is live, and the thread renews from there when the next handler blocks', async () => {
    vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'c1', blockMs: 100, streamPrefix: '', recovery: LAZY } as never,
      [SlowController],
    );
    await redis.client.xgroup('CREATE', 'lease-thread.slow', 'g', '0', 'MKSTREAM').catch(() => undefined);
    await waitFor(async () => (await streamsConnectionAges(redis.client)).some((age) => age >= 2), 'the server connected two seconds ago', { timeout: 15_000, interval: 100 });
    expect(await leaseConnections()).toBe(0);
    started = 0;
    await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {});
    await waitFor(() => started === 1, 'the handler started');
    // Held at two renewals in a row (1 s apart): the thread is asked to connect.
    await waitFor(async () => (await leaseConnections()) === 1, 'the lease thread connected ahead of a block', { timeout: 10_000, interval: 50 });
    blockMs = LAZY.minIdleTime + 500;
    release?.();
    const blocked = (await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {})) as string;
    await waitFor(() => started === 2, 'the blocking handler ran', { timeout: 10_000 });
    blockMs = 0;
    expect(renewedJustNow(await leaseConnectionStates(redis.client))).toBe(true);
    const rows = await pendingRows(redis.client, 'lease-thread.slow', 'g');
    expect(rows.filter((row) => row.id === blocked).map((row) => [row.consumer, row.deliveries])).toEqual([['c1', 1]]);
    expect(warnings.filter((w) => w.includes('lease'))).toEqual([]);
  });

  it('a thread that dies: one warning, and renewals on the event loop from then on', async () => {
    setLeaseThreadScript(pathToFileURL(resolve('test/fixtures/dying-lease-thread.mjs')));
    try {
      await serve(redis.server.url);
      await waitFor(() => warnings.some((w) => w.includes('lease thread stopped')), 'the warning', { timeout: 10_000 });
      started = 0;
      await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {});
      await waitFor(() => started === 1, 'the handler started');
      const renewed = () => new RedisStreamsRecovery().stats({ consumer: 'c1' })[0]?.stats.leasesRenewed ?? 0;
      await waitFor(() => renewed() >= 3, 'renewals on the event loop', { timeout: 10_000 });
      expect(await leaseConnections()).toBe(0);
      expect(warnings.filter((w) => w.includes('lease'))).toEqual([
        'the lease thread stopped (it exited (code 3)): leases are renewed on the event loop only from now on, and lapse while it is blocked',
      ]);
    } finally {
      setLeaseThreadScript(pathToFileURL(resolve(compiledPath('src/recovery/lease-thread.ts'))));
    }
  });

  it("a thread whose Redis side cannot be loaded: the failed load is reported as a renewal error, no warning, and close() ends the thread at once", async () => {
    // A copy of build/src without lease-thread-renewal.js: the thread starts, its import() of it rejects.
    const copy = mkdtempSync(join(tmpdir(), 'lease-thread-without-renewal-'));
    try {
      cpSync(resolve('build/src'), join(copy, 'src'), { recursive: true, filter: (source) => !source.endsWith('lease-thread-renewal.js') });
      writeFileSync(join(copy, 'package.json'), JSON.stringify({ type: 'module' }));
      setLeaseThreadScript(pathToFileURL(join(copy, 'src/recovery/lease-thread.js')));
      vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
      // Lazy: the thread loads its Redis side at its first need, the block below.
      running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c1', blockMs: 100, streamPrefix: '', recovery: LAZY } as never, [SlowController]);
      await redis.client.xgroup('CREATE', 'lease-thread.slow', 'g', '0', 'MKSTREAM').catch(() => undefined);
      started = 0;
      blockMs = 2_000;
      await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {});
      await waitFor(() => started === 1, 'the blocking handler ran', { timeout: 10_000 });
      blockMs = 0;
      const lastError = () => new RedisStreamsRecovery().stats({ consumer: 'c1' })[0]?.stats.lastError;
      await waitFor(() => typeof lastError() === 'string', 'the failed load reported', { timeout: 5_000 });
      expect(lastError()).toMatch(/^lease renewal could not load its Redis side \(lease-thread-renewal\.js\): Cannot find module '.*lease-thread-renewal\.js'/);
      release?.();
      const closing = Date.now();
      await running.app.close();
      running = undefined;
      // The thread stops on its own (no 3 s grace, no terminate()).
      expect(Date.now() - closing).toBeLessThan(2_000);
      expect(warnings.filter((w) => w.includes('lease'))).toEqual([]);
    } finally {
      setLeaseThreadScript(pathToFileURL(resolve(compiledPath('src/recovery/lease-thread.ts'))));
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('a connection option holding a function: one warning naming it, and renewals on the event loop', async () => {
    const url = new URL(redis.server.url);
    await serve({ host: url.hostname, port: Number(url.port), retryStrategy: () => 50 });
    expect(await leaseConnections()).toBe(0);
    started = 0;
    await xaddEvent(redis.client, 'lease-thread.slow', 'lease-thread.slow', {});
    await waitFor(() => started === 1, 'the handler started');
    const renewed = () => new RedisStreamsRecovery().stats({ consumer: 'c1' })[0]?.stats.leasesRenewed ?? 0;
    await waitFor(() => renewed() >= 3, 'renewals on the event loop', { timeout: 10_000 });
    expect(warnings.filter((w) => w.includes('lease'))).toEqual([
      'lease renewal runs on the event loop: connection holds a function at connection.retryStrategy, which cannot be passed to another thread (docs/recovery.md, "Leases")',
    ]);
  });
});

describe.skipIf(!supportsTls())('lease thread over mutual TLS, its keys and certificates as Buffers (real redis-server built with TLS)', () => {
  const PASSWORD = 'lease-thread-TLS-pw';
  let certs: TestCertificates;
  let server: RedisServerProcess;
  let running: RunningServer | undefined;
  beforeAll(async () => {
    certs = createTestCertificates();
    server = await RedisServerProcess.start({
      password: PASSWORD,
      tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, caFile: certs.ca.certFile, authClients: true, client: { cert: certs.client.cert, key: certs.client.key } },
    });
  }, 60_000);
  afterAll(async () => {
    await running?.app.close();
    await server?.stop();
    certs?.remove();
  });

  it('the thread connects with the same TLS options during a block (its first need: lazy connect) and renews from there; no warning', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const tls = { ca: Buffer.from(certs.ca.cert), cert: Buffer.from(certs.client.cert), key: Buffer.from(certs.client.key) };
    running = await startServer(
      { connection: { host: '127.0.0.1', port: server.port, password: PASSWORD, tls }, group: 'g', consumer: 'tls-1', blockMs: 100, streamPrefix: '', recovery: LAZY } as never,
      [SlowController],
    );
    const check = server.client();
    try {
      await waitFor(async () => (await streamsConnectionAges(check)).some((age) => age >= 2), 'the server connected two seconds ago', { timeout: 15_000, interval: 100 });
      expect(await leaseConnectionsOn(check)).toBe(0);
      started = 0;
      // Blocks from its first entry, for over minIdleTime: the thread loads its Redis side and connects (TLS handshake, AUTH) meanwhile.
      blockMs = LAZY.minIdleTime + 500;
      await xaddEvent(check, 'lease-thread.slow', 'lease-thread.slow', {});
      await waitFor(() => started === 1, 'the handler started');
      blockMs = 0;
      expect(renewedJustNow(await leaseConnectionStates(check))).toBe(true);
      expect((await pendingRows(check, 'lease-thread.slow', 'g'))[0]).toMatchObject({ consumer: 'tls-1', deliveries: 1 });
      expect(warn.mock.calls.filter(([message]) => String(message).includes('lease'))).toEqual([]);
      release?.();
      await running.app.close();
      running = undefined;
      expect(await leaseConnectionsOn(check)).toBe(0);
    } finally {
      check.disconnect();
      warn.mockRestore();
    }
  });
});

describe('lease thread on a Redis Cluster and through Sentinel (real processes)', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    release?.();
    blockMs = 0;
    await running?.app.close();
    running = undefined;
    vi.restoreAllMocks();
  });

  /** Serves the slow handler over `connection`, runs one entry that blocks the loop, and checks the thread renewed it, with no warning. */
  async function renewsFromThread(connection: unknown, consumer: string, nodes: () => Redis[], producer: Redis | Cluster, lazy = false): Promise<void> {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    running = await startServer(
      { connection: connection as string, group: 'g', consumer, blockMs: 100, streamPrefix: '', recovery: lazy ? LAZY : { minIdleTime: 600, leaseInterval: LEASE_INTERVAL } } as never,
      [SlowController],
    );
    const checks = nodes();
    try {
      const connected = async () => (await Promise.all(checks.map(leaseConnectionsOn))).reduce((a, b) => a + b, 0);
      if (lazy) {
        const ages = async () => (await Promise.all(checks.map(streamsConnectionAges))).flat();
        await waitFor(async () => (await ages()).some((age) => age >= 2), 'the server connected two seconds ago', { timeout: 15_000, interval: 100 });
        expect(await connected()).toBe(0);
      } else {
        await waitFor(async () => (await connected()) >= 1, 'the lease thread connected', { timeout: 15_000 });
        await waitFor(async () => quiet(await allLeaseConnectionStates(checks)), 'the thread quiet while the loop is live', { timeout: 15_000, interval: 100 });
      }
      started = 0;
      // Lazy: the thread loads its Redis side and connects to the Cluster (slots, nodes) during this block.
      blockMs = lazy ? LAZY.minIdleTime + 500 : 1_500;
      await producer.xadd('lease-thread.slow', '*', 'pattern', 'lease-thread.slow', 'data', '{}');
      await waitFor(() => started === 1, 'the handler started', { timeout: 10_000 });
      blockMs = 0;
      expect(renewedJustNow(await allLeaseConnectionStates(checks))).toBe(true);
      expect(warn.mock.calls.filter(([message]) => String(message).includes('lease'))).toEqual([]);
    } finally {
      for (const check of checks) check.disconnect();
      producer.disconnect();
    }
  }

  /** One local Cluster of 3 masters for both Cluster tests (a start costs about as much as a test), emptied between them. */
  let cluster: RedisClusterProcess | undefined;
  afterAll(async () => {
    await cluster?.stop();
  });

  /** renewsFromThread on the Cluster, flushed and with none of this transport's connections left (a lazy test counts them) before. */
  async function renewsFromThreadOnCluster(consumer: string, lazy = false): Promise<void> {
    cluster ??= await RedisClusterProcess.start({ masters: 3, replicas: 0 });
    const on = cluster;
    const checks = on.nodes.map((node) => on.nodeClient(node));
    try {
      await Promise.all(checks.map((check) => check.flushall()));
      const ours = async () => (await Promise.all(checks.map(streamsConnectionAges))).flat().length;
      await waitFor(async () => (await ours()) === 0, "the last test's connections closed", { timeout: 10_000, interval: 50 });
    } finally {
      for (const check of checks) check.disconnect();
    }
    try {
      await renewsFromThread({ cluster: { nodes: on.urls } }, consumer, () => on.nodes.map((node) => on.nodeClient(node)), on.client(), lazy);
    } finally {
      release?.();
      await running?.app.close();
      running = undefined;
    }
  }

  it('Cluster ({ cluster: { nodes } }): the thread opens its own Cluster client and renews there', () => renewsFromThreadOnCluster('cluster-1'), 120_000);

  it('Cluster, lazy connect (lease interval 1 s): no lease connection before the block; the thread opens its Cluster client during it and renews there', () =>
    renewsFromThreadOnCluster('cluster-lazy', true), 120_000);

  it('Sentinel (redis+sentinel:// URL): the thread finds the primary through the sentinels and renews there', async () => {
    const set = await RedisSentinelSet.start();
    try {
      await renewsFromThread(set.url, 'sentinel-1', () => [set.primary.client()], set.primary.client());
    } finally {
      release?.();
      await running?.app.close();
      running = undefined;
      await set.stop();
    }
  }, 120_000);
});

describe('lease thread across a Redis restart (real redis-server, AOF)', () => {
  let server: RedisServerProcess;
  let running: RunningServer | undefined;
  beforeAll(async () => {
    server = await RedisServerProcess.start({ appendOnly: true });
  }, 60_000);
  afterAll(async () => {
    release?.();
    await running?.app.close();
    await server?.stop();
  });

  it('reconnects like the other connections and renews from there again while the loop is blocked; no warning', async () => {
    const warnings: string[] = [];
    vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    running = await startServer(
      { connection: server.url, group: 'g', consumer: 'restart-1', blockMs: 100, streamPrefix: '', recovery: { minIdleTime: 600, leaseInterval: LEASE_INTERVAL } } as never,
      [SlowController],
    );
    let check = server.client();
    try {
      await waitFor(async () => (await leaseConnectionsOn(check)) === 1, 'the lease thread connected', { timeout: 10_000 });
      started = 0;
      await xaddEvent(check, 'lease-thread.slow', 'lease-thread.slow', {});
      await waitFor(() => started === 1, 'the handler started');
      check.disconnect();
      await server.restart();
      check = server.client();
      await waitFor(async () => (await leaseConnectionsOn(check)) === 1, 'the lease thread connected again', { timeout: 20_000, interval: 100 });
      await waitFor(async () => quiet(await leaseConnectionStates(check)), 'the thread quiet while the loop is live', { timeout: 15_000, interval: 100 });
      // The first handler ends; the next one blocks the loop: only the reconnected thread renews it.
      blockMs = 1_500;
      release?.();
      const blocked = (await xaddEvent(check, 'lease-thread.slow', 'lease-thread.slow', {})) as string;
      await waitFor(() => started === 2, 'the blocking handler ran', { timeout: 10_000 });
      blockMs = 0;
      expect(renewedJustNow(await leaseConnectionStates(check))).toBe(true);
      const rows = await pendingRows(check, 'lease-thread.slow', 'g');
      expect(rows.filter((row) => row.id === blocked).map((row) => [row.consumer, row.deliveries])).toEqual([['restart-1', 1]]);
      expect(warnings.filter((w) => w.includes('lease thread'))).toEqual([]);
    } finally {
      check.disconnect();
      vi.restoreAllMocks();
    }
  }, 60_000);
});
