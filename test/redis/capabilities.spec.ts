import { spawnSync } from 'node:child_process';
import { Controller, type Logger } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Cluster, Redis as RedisClass, type Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { StreamClaimService } from '../../src/module/claim-services.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsMissingCommandError } from '../../src/errors.js';
import { probeCapabilities } from '../../src/redis/capabilities.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { ourClients } from '../helpers/stream-state.js';
import { useRedisCluster } from '../helpers/redis-cluster.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { recordSocketWrites } from '../helpers/socket-writes.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

@Controller()
class OrdersController {
  @EventPattern<string>('orders')
  handle(): void {}
}

/** True when Redis ran the command; false when it does not know it (or its arguments); other errors fail the test. */
async function accepted(command: Promise<unknown>): Promise<boolean> {
  try {
    await command;
    return true;
  } catch (error) {
    if (/unknown command|syntax error|Invalid stream ID|wrong number of arguments/i.test((error as Error).message)) return false;
    throw error;
  }
}

/** A stream `cap` with entries 1-1..1-3, all read (pending) by consumer c1 of group g. */
async function pendingStream(redis: Redis): Promise<void> {
  for (const id of ['1-1', '1-2', '1-3']) await redis.xadd('cap', id, 'f', 'v');
  await redis.xgroup('CREATE', 'cap', 'g', '0');
  await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', 'cap', '>');
}

function capabilityLines(spy: { mock: { calls: unknown[][] } }): string[] {
  return spy.mock.calls.map(([message]) => String(message)).filter((message) => message.startsWith('Redis capabilities:'));
}

describe('capability probing on the server under test', () => {
  const redis = useRedisServer();

  it('the probe says what the server really does, in one socket write, and writes nothing', async () => {
    await pendingStream(redis.client);
    const probeClient = redis.server.client();
    await probeClient.ping();
    const keysBefore = (await redis.client.keys('*')).sort();
    const writes = recordSocketWrites(probeClient);
    const capabilities = await probeCapabilities(probeClient);
    writes.restore();
    probeClient.disconnect();
    expect(writes.count()).toBe(1);
    expect((await redis.client.keys('*')).sort()).toEqual(keysBefore);

    // Each capability checked against the real command on a real stream.
    const client = redis.client;
    const groupFields = ((await client.call('XINFO', 'GROUPS', 'cap')) as unknown[][])[0]!.map(String);
    const idmpIds = capabilities.idmp
      ? [await client.call('XADD', 'cap', 'IDMP', 'p', 'i', '*', 'f', 'v'), await client.call('XADD', 'cap', 'IDMP', 'p', 'i', '*', 'f', 'v')]
      : [];
    expect(capabilities).toEqual({
      xautoclaim: await accepted(client.call('XAUTOCLAIM', 'cap', 'g', 'c2', 0, '0-0', 'COUNT', 1)),
      lagTracking: groupFields.includes('lag'),
      deletionPolicies: await accepted(client.call('XTRIM', 'cap', 'MAXLEN', 0, 'ACKED')),
      xackdel: await accepted(client.call('XACKDEL', 'cap', 'g', 'IDS', 1, '1-1')),
      xdelex: await accepted(client.call('XDELEX', 'cap', 'IDS', 1, '1-2')),
      idmp: await accepted(client.call('XADD', 'cap', 'IDMP', 'p', 'j', '*', 'f', 'v')),
      xcfgset: await accepted(client.call('XCFGSET', 'cap', 'IDMP-DURATION', 100)),
      missingCommands: [],
      unprobed: [],
    });
    // IDMP really deduplicates where it is reported.
    if (capabilities.idmp) expect(idmpIds[1]).toBe(idmpIds[0]);
    // Every server of the matrix has XAUTOCLAIM (6.2+).
    expect(capabilities.xautoclaim).toBe(true);
  });
});

describe('server.capabilities and client.capabilities', () => {
  let redis: RedisServerProcess | undefined;
  let running: RunningServer | undefined;
  let client: RedisStreamsClient | undefined;
  afterEach(async () => {
    await client?.close();
    await running?.app.close();
    await redis?.stop();
    client = running = redis = undefined;
  });

  it('are probed at listen() and first connect, logged once at debug, and probed again after a reconnect', async () => {
    redis = await RedisServerProcess.start();
    const plain = redis.client();
    const expected = await probeCapabilities(plain);
    plain.disconnect();

    let debug: ReturnType<typeof vi.spyOn> | undefined;
    expect(new RedisStreamsServer({ connection: redis.url, group: 'g', consumer: 'w1' }).capabilities).toBeUndefined();
    running = await startServer({ connection: redis.url, group: 'g', consumer: 'w1', recovery: false, blockMs: 200 }, [OrdersController], [], (s) => {
      debug = vi.spyOn((s as unknown as { logger: Logger }).logger, 'debug');
    });
    client = new RedisStreamsClient({ connection: redis.url });
    expect(client.capabilities).toBeUndefined();
    await client.connect();
    expect(running.server.capabilities).toEqual(expected);
    expect(client.capabilities).toEqual(expected);
    expect(capabilityLines(debug!)).toHaveLength(1);

    // A failover lands on a server without XAUTOCLAIM: both sides learn it after their reconnect.
    await redis.restart({ args: ['--rename-command', 'XAUTOCLAIM', ''] });
    await waitFor(() => running?.server.capabilities?.xautoclaim === false, 'the server to re-probe');
    await waitFor(() => client?.capabilities?.xautoclaim === false, 'the client to re-probe');
    expect(running.server.capabilities).toEqual({ ...expected, xautoclaim: false, missingCommands: ['XAUTOCLAIM'] });
    expect(client.capabilities).toEqual({ ...expected, xautoclaim: false, missingCommands: ['XAUTOCLAIM'] });
    expect(capabilityLines(debug!)).toHaveLength(2);
    expect(capabilityLines(debug!)[1]).toContain('missing commands: XAUTOCLAIM');
    // The server goes on: an entry is still read and handled.
    await expect(lastValueFrom(client.emit('orders', { n: 1 }))).resolves.toMatch(/^\d+-\d+$/);
  });
});

describe('a server without XAUTOCLAIM (renamed away)', () => {
  const redis = useRedisServer({ args: ['--rename-command', 'XAUTOCLAIM', ''] });
  // The CLI runs from build/.
  beforeAll(ensureCompiled, 180_000);

  it('the claim service and the CLI name the command and the Redis version that has it', async () => {
    await pendingStream(redis.client);
    const claims = new StreamClaimService(redis.client);
    const failure = await claims.claim({ key: 'cap', group: 'g', consumer: 'c2', minIdleTime: 1 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RedisStreamsMissingCommandError);
    expect(failure).toMatchObject({ command: 'XAUTOCLAIM', since: '6.2' });
    expect((failure as Error).message).toMatch(/XAUTOCLAIM.*Redis 6\.2 or later.*rename-command/);

    const cli = spawnSync(
      process.execPath,
      ['build/src/cli/main.js', 'claim', 'cap', 'g', 'c2', '--min-idle-time', '1', '--url', redis.server.url],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(cli.status).toBe(1);
    expect(cli.stdout).toBe('');
    expect(cli.stderr).toMatch(/^error: Redis does not know the command XAUTOCLAIM, which the claim service needs: it needs Redis 6\.2 or later/);
    // Nothing was claimed: c1 still holds all three.
    expect(await redis.client.xpending('cap', 'g')).toEqual([3, '1-1', '1-3', [['c1', '3']]]);
  });

  it('a user whose ACL forbids COMMAND sees it missing too (a bare call answers "unknown command")', async () => {
    await redis.client.call('ACL', 'SETUSER', 'nocommand', 'reset', 'on', '>pw', '+@all', '-command', '~*');
    const limited = new RedisClass(`redis://nocommand:pw@127.0.0.1:${redis.server.port}`);
    try {
      await expect(limited.call('COMMAND', 'INFO', 'XADD')).rejects.toThrow(/NOPERM/);
      expect(await probeCapabilities(limited)).toMatchObject({ xautoclaim: false, missingCommands: ['XAUTOCLAIM'], unprobed: [] });
    } finally {
      limited.disconnect();
      await redis.client.call('ACL', 'DELUSER', 'nocommand');
    }
  });

  it('a server, which does not need it, listens and reports it missing', async () => {
    const running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', recovery: false, blockMs: 200 }, [OrdersController]);
    try {
      expect(running.server.capabilities).toMatchObject({ xautoclaim: false, missingCommands: ['XAUTOCLAIM'] });
    } finally {
      await running.app.close();
    }
  });
});

describe('a server without a command the transport needs', () => {
  const noXclaim = useRedisServer({ args: ['--rename-command', 'XCLAIM', ''] });

  it('listen() fails naming XCLAIM and Redis 5.0 and leaves no connection open', async () => {
    const failure = await startServer(
      { connection: noXclaim.server.url, group: 'g', consumer: 'w1', blockMs: 200 },
      [OrdersController],
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RedisStreamsMissingCommandError);
    expect(failure).toMatchObject({ command: 'XCLAIM', since: '5.0', neededBy: 'RedisStreamsServer' });
    await waitFor(async () => (await ourClients(noXclaim.client)).length === 0, 'the server connections to close');
  });
});

describe('a server without XADD', () => {
  const noXadd = useRedisServer({ args: ['--rename-command', 'XADD', ''] });

  it('the client fails its first connect and its emits naming XADD', async () => {
    const client = new RedisStreamsClient({ connection: noXadd.server.url });
    try {
      await expect(client.connect()).rejects.toMatchObject({ name: 'RedisStreamsMissingCommandError', command: 'XADD', since: '5.0' });
      await expect(lastValueFrom(client.emit('orders', { n: 1 }))).rejects.toThrow(
        /Cannot add an entry to stream "orders": Redis does not know the command XADD, which RedisStreamsClient needs: it needs Redis 5\.0 or later/,
      );
    } finally {
      await client.close();
    }
  });
});

describe('a Redis Cluster user whose ACL forbids COMMAND', () => {
  const redis = useRedisCluster({ masters: 3, replicas: 0 });

  it('the probe asks the bare commands of one node and learns what the default user learns; listen() and connect() succeed', async () => {
    for (const node of redis.cluster.nodes) {
      const admin = redis.cluster.nodeClient(node);
      await admin.call('ACL', 'SETUSER', 'nocommand', 'reset', 'on', '>pw', '+@all', '-command', '~*', '&*');
      admin.disconnect();
    }
    const limitedCluster = () => new Cluster(redis.cluster.startupNodes, { redisOptions: { username: 'nocommand', password: 'pw' } });
    const plain = redis.cluster.client();
    const limited = limitedCluster();
    let running: RunningServer | undefined;
    let client: RedisStreamsClient | undefined;
    try {
      const expected = await probeCapabilities(plain);
      expect(expected.unprobed).toEqual([]);
      await expect(limited.call('COMMAND', 'INFO', 'XADD')).rejects.toThrow(/NOPERM/);
      expect(await probeCapabilities(limited)).toEqual(expected);

      running = await startServer({ connection: limitedCluster(), group: 'g', consumer: 'w1', recovery: false, blockMs: 200 }, [OrdersController]);
      expect(running.server.capabilities).toEqual(expected);
      client = new RedisStreamsClient({ connection: limitedCluster() });
      await client.connect();
      expect(client.capabilities).toEqual(expected);
    } finally {
      await client?.close();
      await running?.app.close();
      limited.disconnect();
      plain.disconnect();
    }
  });
});
