import type { Redis } from 'ioredis';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeReplyArgs, type ReplyPacket } from '../../src/codec/reply.js';
import { fieldsFromArray, type StreamFields } from '../../src/codec/wire-format.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { jsonReply, StreamResponder } from '../helpers/stream-responder.js';
import { waitFor } from '../helpers/wait.js';

describe('RedisStreamsClient.send (client side of request/reply)', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  const closers: (() => Promise<void> | void)[] = [];
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const created = new RedisStreamsClient({ connection: server.url, ...options });
    closers.push(() => created.close());
    return created;
  };
  const respond = (stream: string, answer: (request: StreamFields) => ReplyPacket | undefined) => {
    const reader = server.client();
    const responder = new StreamResponder(reader, redis, stream, (request) => {
      const packet = answer(request);
      return packet ? [jsonReply(request, packet)] : [];
    });
    closers.push(async () => {
      await responder.stop();
      reader.disconnect();
    });
    return responder;
  };

  beforeAll(async () => {
    server = await RedisServerProcess.start();
    redis = server.client();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('writes a request entry (pattern, data, headers, id, replyTo) and resolves with the reply', async () => {
    await redis.xadd('sum', '*', 'seed', '1'); // the stream exists, as when a server created its group
    const responder = respond('sum', (request) => {
      if (!request.data) return undefined;
      const numbers = JSON.parse(request.data) as number[];
      return { response: numbers.reduce((a, b) => a + b, 0), isDisposed: true };
    });
    const c = client();
    const record = new RedisStreamsRecord([1, 2, 3], { headers: { tenant: 'acme' } });
    expect(await lastValueFrom(c.send('sum', record))).toBe(6);
    const request = responder.requests.find((r) => r.pattern === 'sum');
    expect(Object.keys(request ?? {})).toEqual(['pattern', 'data', 'headers', 'id', 'replyTo']);
    expect(request).toMatchObject({ pattern: 'sum', data: '[1,2,3]', headers: '{"tenant":"acme"}', replyTo: c.replyStream });
    expect(c.replyStream).toMatch(/^nestjs-redis-streams:\{[0-9a-f-]{36}\}:replies$/);
  });

  it('routes replies to their own callers: two instances sending concurrently', async () => {
    await redis.xadd('echo', '*', 'seed', '1');
    respond('echo', (request) => (request.data ? { response: JSON.parse(request.data), isDisposed: true } : undefined));
    const a = client();
    const b = client();
    const sends = (c: RedisStreamsClient, tag: string) =>
      Promise.all(Array.from({ length: 50 }, (_, i) => lastValueFrom(c.send<string>('echo', `${tag}-${i}`))));
    const [fromA, fromB] = await Promise.all([sends(a, 'a'), sends(b, 'b')]);
    expect(fromA).toEqual(Array.from({ length: 50 }, (_, i) => `a-${i}`));
    expect(fromB).toEqual(Array.from({ length: 50 }, (_, i) => `b-${i}`));
    expect(a.replyStream).not.toBe(b.replyStream);
    // Handled replies are deleted; the reply streams carry a TTL so they expire with their client.
    await waitFor(async () => (await redis.xlen(a.replyStream)) === 0 && (await redis.xlen(b.replyStream)) === 0, 'replies deleted');
    expect(await redis.pttl(a.replyStream)).toBeGreaterThan(0);
  });

  it('turns an error reply into an error, passing the payload through', async () => {
    await redis.xadd('fails', '*', 'seed', '1');
    respond('fails', (request) => (request.data ? { err: { status: 'error', message: 'out of stock' }, isDisposed: true } : undefined));
    await expect(lastValueFrom(client().send('fails', {}))).rejects.toEqual({ status: 'error', message: 'out of stock' });
  });

  it('fails at once with Nest\'s "no handler" error when the stream does not exist', async () => {
    const c = client({ timeout: 60_000 });
    const error = await lastValueFrom(c.send('nobody-home', 1)).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'RedisStreamsNoHandlerError',
      message: 'There is no matching message handler defined in the remote service.',
      pattern: 'nobody-home',
      stream: 'nobody-home',
    });
    expect(await redis.exists('nobody-home')).toBe(0);
  });

  it('maps a server "no handler" reply to the same error', async () => {
    await redis.xadd('unhandled', '*', 'seed', '1');
    respond('unhandled', (request) =>
      request.id ? { err: 'There is no matching message handler defined in the remote service.', isDisposed: true } : undefined,
    );
    await expect(lastValueFrom(client().send('unhandled', 1))).rejects.toMatchObject({ name: 'RedisStreamsNoHandlerError' });
  });

  it('times out with the client timeout and with a per-call timeout, naming pattern and ms', async () => {
    await redis.xadd('silent', '*', 'seed', '1');
    const c = client({ timeout: 200 });
    await expect(lastValueFrom(c.send('silent', 1))).rejects.toMatchObject({
      name: 'RedisStreamsTimeoutError',
      message: 'No reply to "silent" within 200 ms',
    });
    await expect(lastValueFrom(c.send('silent', new RedisStreamsRecord(1, { timeout: 50 })))).rejects.toMatchObject({
      name: 'RedisStreamsTimeoutError',
      timeoutMs: 50,
    });
    expect(routing(c).size).toBe(0);
  });

  it('rejects a bad per-call timeout and a raw record before writing anything', async () => {
    await redis.xadd('checked', '*', 'seed', '1');
    const c = client();
    await expect(lastValueFrom(c.send('checked', new RedisStreamsRecord(1, { timeout: -1 })))).rejects.toMatchObject({
      name: 'RedisStreamsOptionError',
      option: 'timeout',
    });
    await expect(lastValueFrom(c.send('checked', new RedisStreamsRecord({ a: '1' }, { raw: true })))).rejects.toMatchObject({
      name: 'RedisStreamsOptionError',
      option: 'raw',
    });
    expect(await redis.xlen('checked')).toBe(1);
    expect(routing(c).size).toBe(0);
  });

  it('a send that fails before writing (data JSON cannot encode) leaves no timer and no routing entry behind', async () => {
    await redis.xadd('unencodable', '*', 'seed', '1');
    respond('unencodable', (request) => (request.id ? { response: 'ok', isDisposed: true } : undefined));
    const c = client({ timeout: 60_000 });
    expect(await lastValueFrom(c.send('unencodable', 1))).toBe('ok');
    await waitFor(async () => (await redis.xlen(c.replyStream)) === 0, 'the handled reply to be removed');
    const timersBefore = activeTimers();
    await expect(lastValueFrom(c.send('unencodable', { amount: 10n }))).rejects.toThrow(/BigInt/);
    expect(routing(c).size).toBe(0);
    // A timer left behind would keep the process alive for `timeout` (60 s here).
    expect(activeTimers()).toBe(timersBefore);
    expect(await redis.xlen('unencodable')).toBe(2);
  });

  it('drops the pending entry when the caller unsubscribes; a late reply is ignored', async () => {
    await redis.xadd('late', '*', 'seed', '1');
    const c = client();
    const subscription = c.send('late', 1).subscribe({ next: () => expect.fail('no value after unsubscribe') });
    await waitFor(async () => (await redis.xlen('late')) === 2, 'the request entry');
    expect(routing(c).size).toBe(1);
    subscription.unsubscribe();
    expect(routing(c).size).toBe(0);
    // Answer now: the reply arrives and is deleted, nobody is called.
    const [[, fields]] = ((await redis.xrevrange('late', '+', '-', 'COUNT', 1)) as [string, string[]][]) as [[string, string[]]];
    const request = fieldsFromArray(fields);
    await redis.xadd(c.replyStream, '*', ...encodeReplyArgs(request.id as string, { response: 'late', isDisposed: true }));
    await waitFor(async () => (await redis.xlen(c.replyStream)) === 0, 'the late reply to be consumed');
  });

  it('close() fails pending requests with "Connection closed" and deletes the reply stream', async () => {
    await redis.xadd('slow', '*', 'seed', '1');
    await redis.xadd('quick', '*', 'seed', '1');
    respond('quick', (request) => (request.id ? { response: 'ok', isDisposed: true } : undefined));
    const c = new RedisStreamsClient({ connection: server.url });
    expect(await firstValueFrom(c.send('quick', 1))).toBe('ok');
    expect(await redis.exists(c.replyStream)).toBe(1);
    const pending = Promise.allSettled([lastValueFrom(c.send('slow', 1)), lastValueFrom(c.send('slow', 2))]);
    await waitFor(() => routing(c).size === 2, 'two pending requests');
    await c.close();
    const results = await pending;
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'fulfilled'))).toEqual([
      'Connection closed',
      'Connection closed',
    ]);
    expect(await redis.exists(c.replyStream)).toBe(0);
  });

  it('a send() made as close() begins, or while it runs, fails with "Connection closed": nothing opened, no reply stream left', async () => {
    await redis.xadd('closing', '*', 'seed', '1');
    respond('closing', (request) => (request.data ? { response: JSON.parse(request.data), isDisposed: true } : undefined));
    const c = client({ timeout: 5_000 });
    expect(await lastValueFrom(c.send('closing', 1))).toBe(1);
    const justBefore = lastValueFrom(c.send('closing', 2)).catch((error: unknown) => error);
    const closing = c.close();
    const during = lastValueFrom(c.send('closing', 3)).catch((error: unknown) => error);
    await closing;
    expect(await justBefore).toMatchObject({ message: 'Connection closed' });
    expect(await during).toMatchObject({ message: 'Connection closed' });
    expect(await redis.exists(c.replyStream)).toBe(0);
    const connected = String(await redis.client('LIST'))
      .split('\n')
      .filter((line) => line.includes('name=nestjs-redis-streams:client'));
    expect(connected).toEqual([]);
    // Closed and done: the next call connects again.
    expect(await lastValueFrom(c.send('closing', 4))).toBe(4);
  });

  it('a dead client\'s reply stream expires on its own (TTL from replyTtl)', async () => {
    await redis.xadd('ttl', '*', 'seed', '1');
    respond('ttl', (request) => (request.id ? { response: 'ok', isDisposed: true } : undefined));
    const c = client({ replyTtl: 1_000 });
    expect(await lastValueFrom(c.send('ttl', 1))).toBe('ok');
    await waitFor(async () => {
      const ttl = await redis.pttl(c.replyStream);
      return ttl > 0 && ttl <= 1_000;
    }, 'the client to set its own reply TTL');
    // Simulate a crash: drop the client's sockets without close(), so nobody renews or deletes.
    const sockets = await redis.client('LIST');
    const ids = String(sockets)
      .split('\n')
      .filter((line) => line.includes('name=nestjs-redis-streams:client'))
      .map((line) => /id=(\d+)/.exec(line)?.[1]);
    stopRenewal(c);
    for (const id of ids) if (id) await redis.client('KILL', 'ID', id);
    await waitFor(async () => (await redis.exists(c.replyStream)) === 0, 'the reply stream to expire', { timeout: 5_000 });
  });
});

function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
}

function routing(client: RedisStreamsClient): Map<string, unknown> {
  return (client as unknown as { routingMap: Map<string, unknown> }).routingMap;
}

/** A crashed process runs no timers: stop the client's renewal so only Redis' TTL is left. */
function stopRenewal(client: RedisStreamsClient): void {
  const replies = (client as unknown as { requests: { replies?: { listener: { keepAlive?: NodeJS.Timeout } } } }).requests.replies;
  if (replies?.listener.keepAlive === undefined) throw new Error('the client has no reply stream renewal to stop');
  clearInterval(replies.listener.keepAlive);
}
