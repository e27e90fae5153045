import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { lastValueFrom, of, delay as delayed } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { waitFor } from '../helpers/wait.js';

const seenEvents: { data: unknown; headers: Record<string, string>; fields: Record<string, string> }[] = [];

@Controller()
class MathController {
  @MessagePattern('math.sum')
  sum(@Payload() numbers: number[]) {
    return numbers.reduce((a, b) => a + b, 0);
  }

  @MessagePattern('math.slowDouble')
  async slowDouble(@Payload() n: number) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return n * 2;
  }

  @MessagePattern('math.observable')
  observable(@Payload() n: number) {
    return of(n + 1).pipe(delayed(1));
  }

  @MessagePattern('math.echo')
  echo(@Payload() tag: string, @Ctx() ctx: RedisStreamsContext) {
    return { tag, headers: { ...ctx.getHeaders() }, pattern: ctx.getPattern() };
  }

  @MessagePattern('math.fail')
  fail() {
    throw new Error('boom');
  }

  @MessagePattern('math.rpcFail')
  rpcFail() {
    throw new RpcException({ code: 'OUT_OF_STOCK', item: 'kettle' });
  }

  @MessagePattern('math.never')
  never() {
    return new Promise(() => undefined);
  }

  @EventPattern<string>('audit')
  audit(@Payload() data: unknown, @Ctx() ctx: unknown) {
    const context = ctx as RedisStreamsContext;
    seenEvents.push({ data, headers: { ...context.getHeaders() }, fields: { ...context.getFields() } });
  }
}

@Module({ controllers: [MathController] })
class MathModule {}

describe('RedisStreamsClient against RedisStreamsServer', () => {
  let server: RedisServerProcess;
  let redis: Redis;
  let app: INestMicroservice;
  const clients: RedisStreamsClient[] = [];
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const created = new RedisStreamsClient({ connection: server.url, ...options });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    server = await RedisServerProcess.start();
    redis = server.client();
    const moduleRef = await Test.createTestingModule({ imports: [MathModule] }).compile();
    app = moduleRef.createNestMicroservice({
      strategy: new RedisStreamsServer({ connection: server.url, group: 'math', blockMs: 100, shutdownTimeout: 500 }),
      logger: false,
    });
    await app.listen();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await app?.close();
    redis.disconnect();
    await server.stop();
  });

  it('gets the value of a sync, an async and an Observable handler', async () => {
    const c = client();
    expect(await lastValueFrom(c.send('math.sum', [1, 2, 3]))).toBe(6);
    expect(await lastValueFrom(c.send('math.slowDouble', 21))).toBe(42);
    expect(await lastValueFrom(c.send('math.observable', 9))).toBe(10);
  });

  it('two client instances sending concurrently each receive exactly their own replies', async () => {
    const a = client();
    const b = client();
    const run = (c: RedisStreamsClient, offset: number) =>
      Promise.all(Array.from({ length: 40 }, (_, i) => lastValueFrom(c.send<number>('math.slowDouble', offset + i))));
    const [fromA, fromB] = await Promise.all([run(a, 0), run(b, 1000)]);
    expect(fromA).toEqual(Array.from({ length: 40 }, (_, i) => 2 * i));
    expect(fromB).toEqual(Array.from({ length: 40 }, (_, i) => 2 * (1000 + i)));
  });

  it('passes headers set by the client (and Nest dispatch metadata) to the handler context', async () => {
    const c = client();
    const hookable = c as unknown as { setOnDispatchHook?: (hook: (p: { metadata?: Record<string, string> }) => void) => void };
    hookable.setOnDispatchHook?.((packet) => {
      packet.metadata = { traceparent: '00-trace-01' };
    });
    const reply = await lastValueFrom(c.send('math.echo', new RedisStreamsRecord('t1', { headers: { tenant: 'acme' } })));
    const expected = hookable.setOnDispatchHook ? { traceparent: '00-trace-01', tenant: 'acme' } : { tenant: 'acme' };
    expect(reply).toEqual({ tag: 't1', headers: expected, pattern: 'math.echo' });

    await lastValueFrom(c.emit('audit', new RedisStreamsRecord({ n: 1 }, { headers: { source: 'test' } })));
    await waitFor(() => seenEvents.length === 1, 'the audit event');
    expect(seenEvents[0]?.data).toEqual({ n: 1 });
    expect(seenEvents[0]?.headers).toMatchObject({ source: 'test' });
  });

  it('delivers a raw emit to an ordinary handler as the fields given', async () => {
    const c = client();
    const id = await lastValueFrom(c.emit('audit', new RedisStreamsRecord({ item: 'kettle', qty: 2 }, { raw: true })));
    const [[storedId, fields]] = (await redis.xrange('audit', id as string, id as string)) as [[string, string[]]];
    expect(storedId).toBe(id);
    expect(fields).toEqual(['item', 'kettle', 'qty', '2']);
  });

  it('a handler error reaches the caller as an error', async () => {
    await expect(lastValueFrom(client().send('math.fail', {}))).rejects.toEqual({
      status: 'error',
      message: 'Internal server error',
    });
  });

  it('an RpcException payload passes through unchanged', async () => {
    await expect(lastValueFrom(client().send('math.rpcFail', {}))).rejects.toEqual({ code: 'OUT_OF_STOCK', item: 'kettle' });
  });

  it('a pattern without a handler fails at once when its stream is missing; on an event-only stream the request is an event', async () => {
    const c = client({ timeout: 20_000 });
    await expect(lastValueFrom(c.send('math.unknown', 1))).rejects.toMatchObject({
      name: 'RedisStreamsNoHandlerError',
      message: 'There is no matching message handler defined in the remote service.',
    });
    // The stream of 'audit' exists and is read, but only an event handler is bound there: it
    // handles the request as an event and answers nothing (a message handler of another group could).
    await expect(lastValueFrom(c.send('audit', new RedisStreamsRecord({ asked: 1 }, { timeout: 300 })))).rejects.toMatchObject({
      name: 'RedisStreamsTimeoutError',
      pattern: 'audit',
    });
    await waitFor(() => seenEvents.some((event) => JSON.stringify(event.data) === '{"asked":1}'), 'the event handler to get the request');
  });

  it('times out a request whose handler never answers', async () => {
    await expect(lastValueFrom(client().send('math.never', new RedisStreamsRecord(1, { timeout: 300 })))).rejects.toMatchObject({
      name: 'RedisStreamsTimeoutError',
      message: 'No reply to "math.never" within 300 ms',
    });
  });

  it('close() with requests pending fails them and removes the reply stream', async () => {
    const c = new RedisStreamsClient({ connection: server.url });
    expect(await lastValueFrom(c.send('math.sum', [1]))).toBe(1);
    const pending = lastValueFrom(c.send('math.never', 1)).catch((error: unknown) => error);
    await waitFor(async () => (await redis.xlen('math.never')) > 0, 'the request entry');
    await c.close();
    expect(await pending).toMatchObject({ message: 'Connection closed' });
    expect(await redis.exists(c.replyStream)).toBe(0);
  });
});
