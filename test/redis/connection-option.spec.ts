import { connect, createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsConnectionError } from '../../src/errors.js';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { optionError } from '../helpers/option-errors.js';
import { freePort } from '../helpers/redis-server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

type Build = (connection: unknown) => unknown;
const BUILDERS: [string, Build][] = [
  ['server', (connection) => new RedisStreamsServer({ connection: connection as RedisConnection, group: 'g' })],
  ['client', (connection) => new RedisStreamsClient({ connection: connection as RedisConnection })],
  ['module', (connection) => RedisStreamsModule.forRoot({ connection: connection as RedisConnection })],
];

describe.each(BUILDERS)('connection checked in the constructor: %s', (_, build) => {
  it.each([
    'http://127.0.0.1:6430',
    'ftp://x',
    'not a url',
    ':s3cretPW@127.0.0.1:6390',
    'user:s3cretPW@127.0.0.1:6390',
    '/tmp/redis.sock',
    'unix://relative.sock',
    'redis://:s3cretPW@/0',
    'redis://127.0.0.1:6390/orders',
    42,
    null,
    ['redis://127.0.0.1'],
    { host: 42 },
    { port: 'x' },
  ])('rejects %j naming "connection", without the password', (connection) => {
    const error = optionError(() => build(connection));
    expect(error).toMatchObject({ name: 'RedisStreamsOptionError' });
    expect(error.option).toMatch(/^connection/);
    expect(error.message).not.toContain('s3cretPW');
  });

  it.each([
    'redis://127.0.0.1:6390',
    'redis://user:pw@127.0.0.1:6390/2',
    'rediss://redis.example:6390',
    'unix:///run/redis/redis.sock',
    { host: '127.0.0.1', port: 6390 },
    { path: '/run/redis/redis.sock' },
  ])('accepts %j', (connection) => {
    expect(() => build(connection)).not.toThrow();
  });

  it.each([
    [{ cluster: {} }, 'connection.cluster.nodes'],
    [{ cluster: { nodes: [] } }, 'connection.cluster.nodes'],
    [{ cluster: { nodes: 'redis://127.0.0.1:7000' } }, 'connection.cluster.nodes'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000', 'http://127.0.0.1:7001'] } }, 'connection.cluster.nodes[1]'],
    [{ cluster: { nodes: ['redis://:s3cretPW@127.0.0.1:7000/3'] } }, 'connection.cluster.nodes[0]'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000', 'rediss://127.0.0.1:7001'] } }, 'connection.cluster.nodes'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000'], options: 'tls' } }, 'connection.cluster.options'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000'], options: { natMap: 3 } } }, 'connection.cluster.options.natMap'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000'], options: { keyPrefix: 'a:' } } }, 'connection.cluster.options.keyPrefix'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000'], options: { redisOptions: { keyPrefix: 'a:' } } } }, 'connection.cluster.options.redisOptions.keyPrefix'],
    [{ cluster: { nodes: ['redis://127.0.0.1:7000'], startup: true } }, 'connection.cluster.startup'],
    [{ host: '127.0.0.1', cluster: { nodes: ['redis://127.0.0.1:7000'] } }, 'connection.host'],
  ])('rejects the cluster form %j naming %s, without the password', (connection, option) => {
    const error = optionError(() => build(connection));
    expect(error).toMatchObject({ name: 'RedisStreamsOptionError', option });
    expect(error.message).not.toContain('s3cretPW');
  });

  it.each([
    { cluster: { nodes: ['redis://127.0.0.1:7000', 'redis://:pw@10.0.0.2:7001'] } },
    { cluster: { nodes: ['rediss://redis.example:7000'], options: { natMap: { '10.0.0.2:7001': { host: '127.0.0.1', port: 17001 } } } } },
    { cluster: { nodes: ['redis://127.0.0.1:7000'], options: { redisOptions: { password: 'pw' }, scaleReads: 'master' } } },
    { sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'mymaster' },
  ])('accepts %j', (connection) => {
    expect(() => build(connection)).not.toThrow();
  });

  it('accepts a Redis instance', () => {
    const redis = new Redis({ lazyConnect: true });
    expect(() => build(redis)).not.toThrow();
    redis.disconnect();
  });

  it('rejects ioredis keyPrefix (options, URL query, instance), pointing to the transport prefix', () => {
    const instance = new Redis({ lazyConnect: true, keyPrefix: 'app:' });
    for (const connection of [{ host: '127.0.0.1', keyPrefix: 'app:' }, 'redis://127.0.0.1:6390/?keyPrefix=app:', instance]) {
      const error = optionError(() => build(connection));
      expect(error).toMatchObject({ name: 'RedisStreamsOptionError', option: 'connection.keyPrefix' });
      expect(error.message).toContain('streamPrefix');
    }
    instance.disconnect();
  });
});

describe('listen() at start-up fails within startupTimeout and closes what it opened', () => {
  const redis = useRedisServer({ password: 'right-password' });

  async function failedListen(connection: string, startupTimeout: number) {
    const server = new RedisStreamsServer({ connection, group: 'g', consumer: 'c', startupTimeout, recovery: false });
    server.addHandler('orders', async () => undefined, true);
    const started = Date.now();
    const error = await new Promise<unknown>((resolve) => void server.listen(resolve));
    const elapsed = Date.now() - started;
    await server.close();
    return { error, elapsed };
  }

  it('a refused connection: a RedisStreamsConnectionError after startupTimeout, nothing reconnecting', async () => {
    const { error } = await failedListen(`redis://127.0.0.1:${await freePort()}`, 1_000);
    expect(error).toBeInstanceOf(RedisStreamsConnectionError);
    expect((error as Error).message).toMatch(/within 1000 ms: connection refused/);
  });

  it('an unknown host: a RedisStreamsConnectionError naming it', async () => {
    const { error } = await failedListen('redis://nonexistent.invalid:6390', 1_000);
    expect(error).toBeInstanceOf(RedisStreamsConnectionError);
    expect((error as Error).message).toMatch(/nonexistent\.invalid.*host not found/);
  });

  it('a wrong password fails at once (not after the timeout), without the password', async () => {
    const { error, elapsed } = await failedListen(`redis://default:wr0ngPW1@127.0.0.1:${redis.server.port}`, 60_000);
    expect(error).toBeInstanceOf(RedisStreamsConnectionError);
    expect((error as Error).message).toMatch(/refused the credentials: WRONGPASS/);
    expect((error as Error).message).not.toContain('wr0ngPW1');
    expect(elapsed).toBeLessThan(30_000);
  });

  it('after a failed start nothing reconnects (a server that drops every connection sees no new one)', async () => {
    /** Client ports of the connections the dropper accepted, in accept order. */
    const accepted: number[] = [];
    const dropper = createServer((socket) => {
      accepted.push(socket.remotePort ?? 0);
      socket.destroy();
    });
    await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve));
    const port = (dropper.address() as AddressInfo).port;
    // 2 s: ioredis retries after 50, 150, 300... ms, so even a loaded event loop retries meanwhile.
    const { error } = await failedListen(`redis://127.0.0.1:${port}`, 2_000);
    expect(error).toBeInstanceOf(RedisStreamsConnectionError);
    // A connection the server opened before it closed may still wait in the accept queue: a probe
    // opened now is accepted after it (FIFO), so once the probe is seen, every earlier one is counted.
    const probe = connect(port, '127.0.0.1');
    probe.on('error', () => undefined);
    await new Promise<void>((resolve) => probe.once('connect', () => resolve()));
    const probePort = probe.localPort;
    await waitFor(() => accepted.includes(probePort ?? -1), 'the probe connection accepted');
    const ours = () => accepted.filter((remotePort) => remotePort !== probePort).length;
    expect(ours()).toBeGreaterThan(1); // it did retry while starting
    const after = ours();
    // Absence cannot be awaited: ioredis retries every 50..2000 ms, so 2.5 s would show a retry.
    await sleep(2_500);
    dropper.close();
    expect(ours()).toBe(after);
  });

  it('the right password starts', async () => {
    const server = new RedisStreamsServer({
      connection: `redis://default:right-password@127.0.0.1:${redis.server.port}`,
      group: 'g',
      consumer: 'c',
      startupTimeout: 5_000,
      recovery: false,
    });
    server.addHandler('orders', async () => undefined, true);
    await new Promise<void>((resolve, reject) => void server.listen((error) => (error ? reject(error) : resolve())));
    await server.close();
  });

  it("a client's first call fails with a RedisStreamsConnectionError giving the reason", async () => {
    const client = new RedisStreamsClient({ connection: `redis://default:wr0ngPW1@127.0.0.1:${redis.server.port}`, commandTimeout: 2_000 });
    const error = await lastValueFrom(client.emit('orders', { n: 1 })).catch((e: unknown) => e);
    await client.close();
    expect((error as Error).cause).toBeInstanceOf(RedisStreamsConnectionError);
    expect((error as Error).message).toMatch(/WRONGPASS/);
  });
});
