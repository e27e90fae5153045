import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient, type RedisStreamsClientStatus } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { freePort, RedisServerProcess } from '../helpers/redis-server.js';
import { settleWithin } from '../helpers/stream-responder.js';
import { waitFor } from '../helpers/wait.js';

describe('RedisStreamsClient options', () => {
  const invalid: [string, Record<string, unknown>, string][] = [
    ['negative maxLen', { trim: { maxLen: -1 } }, 'trim.maxLen'],
    ['fractional maxLen', { trim: { maxLen: 1.5 } }, 'trim.maxLen'],
    ['zero maxAge', { trim: { maxAge: 0 } }, 'trim.maxAge'],
    ['unparsable maxAge', { trim: { maxAge: '10 minutes' } }, 'trim.maxAge'],
    ['maxLen and maxAge together', { trim: { maxLen: 1, maxAge: 1000 } }, 'trim'],
    ['empty trim object', { trim: {} }, 'trim'],
    ['non-boolean exact', { trim: { maxLen: 1, exact: 'yes' } }, 'trim.exact'],
    ['bad per-pattern trimming', { trimming: { orders: { maxLen: -5 } } }, 'trimming.orders.maxLen'],
    ['zero timeout', { timeout: 0 }, 'timeout'],
    ['negative commandTimeout', { commandTimeout: -1 }, 'commandTimeout'],
    ['non-integer replyTtl', { replyTtl: 'long' }, 'replyTtl'],
    ['non-boolean noMkStream', { noMkStream: 1 }, 'noMkStream'],
    ['non-string streamPrefix', { streamPrefix: 3 }, 'streamPrefix'],
    ['unknown option', { host: 'localhost' }, 'host'],
  ];
  it.each(invalid)('rejects %s up front, naming the option', (_, options, option) => {
    let caught: unknown;
    try {
      new RedisStreamsClient(options as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ name: 'RedisStreamsOptionError', option });
    expect((caught as Error).message).toContain(`"${option}"`);
  });

  it('accepts the defaults and every documented option', () => {
    expect(() => new RedisStreamsClient()).not.toThrow();
    expect(
      () =>
        new RedisStreamsClient({
          connection: 'redis://127.0.0.1:1',
          streamPrefix: 'app:',
          trim: { maxAge: 'PT10M', exact: true },
          trimming: { orders: false, audit: { maxLen: 10 } },
          noMkStream: true,
          timeout: 1000,
          commandTimeout: 100,
          replyPrefix: 'r:',
          replyTtl: 5000,
          clockRefreshInterval: 10_000,
        }),
    ).not.toThrow();
  });
});

describe('RedisStreamsClient connection', () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('unwrap() throws before connect and returns the ioredis client after', async () => {
    const client = new RedisStreamsClient({ connection: server.url });
    try {
      expect(() => client.unwrap()).toThrow(/connect/);
      await client.connect();
      const redis = client.unwrap<Redis>();
      expect(redis).toBeInstanceOf(Redis);
      expect(await redis.ping()).toBe('PONG');
    } finally {
      await client.close();
    }
  });

  it('on() passes producer events through, also when registered before connect', async () => {
    const client = new RedisStreamsClient({ connection: server.url });
    const seen: string[] = [];
    client.on('ready', () => seen.push('ready'));
    try {
      await client.connect();
      expect(seen).toEqual(['ready']);
      client.on('end', () => seen.push('end'));
    } finally {
      await client.close();
    }
    await waitFor(() => seen.length === 2, 'the end event');
    expect(seen).toEqual(['ready', 'end']);
  });

  it('duplicates a Redis instance it is given and leaves that instance open', async () => {
    const mine = server.client();
    const client = new RedisStreamsClient({ connection: mine });
    try {
      const id = await lastValueFrom(client.emit('from-instance', 1));
      expect(client.unwrap()).not.toBe(mine);
      expect(await mine.xlen('from-instance')).toBe(1);
      expect(id).toMatch(/^\d+-\d+$/);
    } finally {
      await client.close();
    }
    expect(await mine.ping()).toBe('PONG');
    mine.disconnect();
  });

  it('fails connect (and the emit) with a clear error when nothing listens', async () => {
    const port = await freePort();
    const client = new RedisStreamsClient({ connection: `redis://:secret@127.0.0.1:${port}`, commandTimeout: 500 });
    try {
      const { error } = await settleWithin(lastValueFrom(client.emit('nowhere', 1)), 10_000);
      expect((error as Error).message).toContain(`Cannot connect to Redis at redis://:***@127.0.0.1:${port}`);
      expect((error as Error).message).not.toContain('secret');
    } finally {
      await client.close();
    }
  });
});

describe('RedisStreamsClient with Redis going away', () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('reports status: connected, reconnecting after a kill, connected after restart, disconnected on close', async () => {
    const client = new RedisStreamsClient({ connection: server.url, commandTimeout: 500 });
    const statuses: RedisStreamsClientStatus[] = [];
    const subscription = client.status.subscribe((status) => statuses.push(status));
    try {
      await lastValueFrom(client.emit('status', 1));
      expect(statuses).toEqual(['connected']);

      await server.kill();
      await waitFor(() => statuses.includes('reconnecting'), 'status reconnecting');
      // While down, an emit fails at once with a clear error instead of queueing.
      const { error } = await settleWithin(lastValueFrom(client.emit('status', 2)), 10_000);
      expect(error).toMatchObject({ name: 'RedisStreamsPublishError', stream: 'status' });
      expect((error as Error).message).toContain('not ready');
      // A failed emit nobody subscribed to must not surface as an unhandled rejection (vitest fails the run on one).
      client.emit('status', 'unobserved');

      await server.restart();
      await waitFor(() => statuses.at(-1) === 'connected', 'status connected after restart', { timeout: 20_000 });
      expect(await lastValueFrom(client.emit('status', 3))).toMatch(/^\d+-\d+$/);
    } finally {
      await client.close();
      subscription.unsubscribe();
    }
    expect(statuses.at(-1)).toBe('disconnected');
    expect(statuses.slice(0, 2)).toEqual(['connected', 'reconnecting']);
  });

  it('fails an emit within commandTimeout when Redis stops answering (paused)', async () => {
    const client = new RedisStreamsClient({ connection: server.url, commandTimeout: 300 });
    try {
      await lastValueFrom(client.emit('paused', 1));
      server.pause();
      const { error } = await settleWithin(
        lastValueFrom(client.emit('paused', new RedisStreamsRecord(2, { trim: false }))),
        10_000,
      );
      expect(error).toMatchObject({ name: 'RedisStreamsPublishError', stream: 'paused' });
      expect((error as Error).message).toContain('commandTimeout');
    } finally {
      server.resume();
      await client.close();
    }
  });

  // ioredis re-sent an XADD left unanswered by a dropped connection once it reconnected: after a
  // failover, an XADD the old primary had run (and replicated) whose reply the kill swallowed was
  // written again to the promoted replica, while the caller had its error and retried.
  it('does not write an XADD again after a reconnect: the emit failed, the caller retried, one entry', async () => {
    const client = new RedisStreamsClient({ connection: server.url, commandTimeout: 300 });
    const admin = server.client();
    try {
      await lastValueFrom(client.emit('resend', 0));
      // Writes wait; reads and CLIENT KILL go on.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      const { error } = await settleWithin(lastValueFrom(client.emit('resend', 1)), 10_000);
      expect(error).toMatchObject({ name: 'RedisStreamsPublishError', stream: 'resend' });
      // The connection drops with that XADD unanswered (and unrun: Redis drops a paused client's command).
      const producer = /^id=(\d+) .* name=nestjs-redis-streams:client /m.exec((await admin.client('LIST')) as string);
      expect(producer).not.toBeNull();
      await admin.client('KILL', 'ID', producer![1]!);
      await admin.call('CLIENT', 'UNPAUSE');
      // The caller retries until the reconnected client takes it. Anything ioredis re-sends on
      // the new connection goes out before this XADD, so it is in the stream by the time it answers.
      await waitFor(
        () =>
          lastValueFrom(client.emit('resend', 1)).then(
            () => true,
            () => false,
          ),
        'an emit to succeed after the reconnect',
        { timeout: 10_000, interval: 50 },
      );
      const payloads = ((await admin.xrange('resend', '-', '+')) as [string, string[]][]).map(([, fields]) => fields.join(' '));
      expect(payloads).toHaveLength(2);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
      await client.close();
    }
  });

  it('close() with a request pending and Redis paused ends within one QUIT timeout, failing the request, leaving no connection', async () => {
    // The default commandTimeout (5 s): the reply stream's DEL and the QUIT share one 2 s wait.
    const client = new RedisStreamsClient({ connection: server.url });
    const redis = server.client();
    const ours = async () =>
      String(await redis.client('LIST'))
        .split('\n')
        .filter((line) => /name=nestjs-redis-streams:client/.test(line));
    try {
      await redis.xadd('paused-request', '*', 'seed', '1');
      const pending = lastValueFrom(client.send('paused-request', 1)).catch((error: unknown) => error);
      await waitFor(async () => (await redis.xlen('paused-request')) === 2, 'the request entry');
      const producer = client.unwrap<Redis>();
      server.pause();
      const started = performance.now();
      const { error } = await settleWithin(client.close(), 10_000);
      expect(error).toBeUndefined();
      // It took 7 s: the DEL waited out commandTimeout, then the QUIT its own 2 s.
      expect(performance.now() - started).toBeLessThan(4_000);
      expect(await pending).toMatchObject({ message: 'Connection closed' });
      await waitFor(() => producer.status === 'end', 'the producer connection ended');
    } finally {
      server.resume();
    }
    try {
      // Redis, answering again, holds none of the client's connections (producer, replies).
      await waitFor(async () => (await ours()).length === 0, 'no client connection left in Redis');
    } finally {
      redis.disconnect();
    }
  });
});
