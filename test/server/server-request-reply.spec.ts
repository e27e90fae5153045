import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { finalize, interval, of, Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeReply, type DecodedReply } from '../../src/codec/reply.js';
import { fieldsFromArray } from '../../src/codec/wire-format.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { recordSocketWrites } from '../helpers/socket-writes.js';
import { waitFor } from '../helpers/wait.js';

@Controller()
class MathController {
  @MessagePattern('sum')
  sum(@Payload() numbers: number[], @Ctx() ctx: RedisStreamsContext): { total: number; stream: string } {
    return { total: numbers.reduce((a, b) => a + b, 0), stream: ctx.getStream() };
  }

  @MessagePattern('count-up')
  countUp(@Payload() to: number) {
    return of(...Array.from({ length: to }, (_, i) => i + 1));
  }

  @MessagePattern('one-value')
  oneValue(@Payload() n: number) {
    return of(n * 10);
  }

  @MessagePattern('gated')
  gated() {
    gate = new Subject<number>();
    return gate;
  }

  @MessagePattern('endless')
  endless() {
    endlessTornDown = false;
    return interval(5).pipe(
      finalize(() => {
        endlessTornDown = true;
      }),
    );
  }

  @MessagePattern('divide')
  async divide(@Payload() [a, b]: [number, number]): Promise<number> {
    if (b === 0) throw new RpcException({ code: 'DIVISION_BY_ZERO', message: 'cannot divide by zero' });
    return a / b;
  }

  @MessagePattern('crash')
  crash(): never {
    throw new Error('internal detail that must not leak');
  }

  @EventPattern<string>('notify')
  notify(@Payload() data: unknown): void {
    notified.push(data);
  }
}

const notified: unknown[] = [];
let endlessTornDown = false;
/** The Subject a `gated` handler returns: the test drives its values and completion. */
let gate: Subject<number> | undefined;

async function request(client: Redis, stream: string, pattern: string, data: unknown, id: string, replyTo: string): Promise<string> {
  return (await client.xadd(stream, '*', 'pattern', pattern, 'data', JSON.stringify(data), 'id', id, 'replyTo', replyTo)) as string;
}

async function repliesOn(client: Redis, replyTo: string): Promise<DecodedReply[]> {
  const entries = (await client.xrange(replyTo, '-', '+')) as Array<[string, string[]]>;
  return entries.map(([, flat]) => decodeReply(fieldsFromArray(flat)));
}

describe('RedisStreamsServer: request/reply', () => {
  let redis: RedisServerProcess;
  let client: Redis;
  let running: RunningServer;

  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    client = redis.client();
    running = await startServer({ connection: redis.url, group: 'rpc', consumer: 'r1', replyTtl: 30_000 }, [MathController]);
  });
  afterAll(async () => {
    await running.app.close();
    client.disconnect();
    await redis.stop();
  });

  it('writes the handler result to replyTo (id + packet), with an expiry, and acks the request', async () => {
    await request(client, 'sum', 'sum', [1, 2, 3], 'corr-1', 'replies:a');
    await waitFor(async () => (await client.xlen('replies:a')) === 1, 'reply entry');
    expect(await repliesOn(client, 'replies:a')).toEqual([{ id: 'corr-1', packet: { response: { total: 6, stream: 'sum' }, isDisposed: true } }]);
    const ttl = await client.pttl('replies:a');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
    await waitFor(async () => (await pendingRows(client, 'sum', 'rpc')).length === 0, 'request acked');
  });

  it('the replies to the requests of one read leave in one socket write', async () => {
    // A connection of ours as the server's command connection, so its writes can be recorded.
    const commands = redis.client();
    await commands.ping();
    const second = await startServer({ connection: commands, group: 'rpc', consumer: 'b1', streamPrefix: 'batched:' }, [MathController]);
    // A fresh server reads one entry first (their size is unknown until it has seen one: the byte
    // bound of maxPrefetchBytes); after that, requests written together arrive in one read.
    await request(client, 'batched:sum', 'sum', [9], 'corr-warm', 'replies:batched');
    await waitFor(async () => (await client.xlen('replies:batched')) === 1, 'warm-up reply');
    const recorded = recordSocketWrites(commands);
    try {
      const together = client.multi();
      for (let i = 0; i < 5; i++) together.xadd('batched:sum', '*', 'pattern', 'sum', 'data', JSON.stringify([i]), 'id', `corr-b${i}`, 'replyTo', 'replies:batched');
      await together.exec();
      await waitFor(async () => (await client.xlen('replies:batched')) === 6, 'five replies');
      const withAllReplies = recorded.writes.filter((text) => [0, 1, 2, 3, 4].every((i) => text.includes(`corr-b${i}`)));
      expect(withAllReplies).toHaveLength(1);
    } finally {
      recorded.restore();
      await second.app.close();
      commands.disconnect();
    }
  });

  it('an Observable replies with each value in order; emitted in one tick, the last one is the final reply', async () => {
    await request(client, 'count-up', 'count-up', 4, 'corr-obs', 'replies:b');
    await waitFor(async () => (await client.xlen('replies:b')) === 4, 'four reply entries');
    expect(await repliesOn(client, 'replies:b')).toEqual([
      { id: 'corr-obs', packet: { response: 1, isDisposed: false } },
      { id: 'corr-obs', packet: { response: 2, isDisposed: false } },
      { id: 'corr-obs', packet: { response: 3, isDisposed: false } },
      { id: 'corr-obs', packet: { response: 4, isDisposed: true } },
    ]);
    await waitFor(async () => (await pendingRows(client, 'count-up', 'rpc')).length === 0, 'request acked');
  });

  it('an Observable of one value (an interceptor or a filter makes these) is one reply entry, as a plain value', async () => {
    await request(client, 'one-value', 'one-value', 4, 'corr-one', 'replies:one');
    await waitFor(async () => (await pendingRows(client, 'one-value', 'rpc')).length === 0, 'request acked');
    expect(await repliesOn(client, 'replies:one')).toEqual([{ id: 'corr-one', packet: { response: 40, isDisposed: true } }]);
  });

  it('values emitted over time are non-final replies as they come; a later completion is a final reply of its own', async () => {
    gate = undefined;
    await request(client, 'gated', 'gated', null, 'corr-gated', 'replies:gated');
    await waitFor(() => gate !== undefined, 'the handler to run');
    const values = gate as unknown as Subject<number>;
    values.next(1);
    await waitFor(async () => (await client.xlen('replies:gated')) === 1, 'the first reply');
    values.next(2);
    await waitFor(async () => (await client.xlen('replies:gated')) === 2, 'the second reply');
    expect((await pendingRows(client, 'gated', 'rpc')).length).toBe(1);
    values.complete();
    await waitFor(async () => (await pendingRows(client, 'gated', 'rpc')).length === 0, 'request acked');
    expect(await repliesOn(client, 'replies:gated')).toEqual([
      { id: 'corr-gated', packet: { response: 1, isDisposed: false } },
      { id: 'corr-gated', packet: { response: 2, isDisposed: false } },
      { id: 'corr-gated', packet: { isDisposed: true } },
    ]);
  });

  it('a streamed reply that cannot be written: error event, the request stays pending, the handler is unsubscribed', async () => {
    const errors: Error[] = [];
    running.server.on('error', (error: Error) => errors.push(error));
    await client.set('replies:not-a-stream', 'taken');
    const entryId = await request(client, 'endless', 'endless', null, 'corr-endless', 'replies:not-a-stream');
    await waitFor(() => errors.some((error) => error.message.includes('replies:not-a-stream')), 'the reply error');
    await waitFor(() => endlessTornDown, 'the handler unsubscribed');
    expect(errors.find((error) => error.message.includes('replies:not-a-stream'))?.message).toContain('the request stays pending');
    expect((await pendingRows(client, 'endless', 'rpc')).map((row) => row.id)).toEqual([entryId]);
  });

  it('errors reply as { err, isDisposed }: an RpcException object passes through, other errors are generic', async () => {
    await request(client, 'divide', 'divide', [1, 0], 'corr-div', 'replies:c');
    await request(client, 'crash', 'crash', null, 'corr-crash', 'replies:c');
    await waitFor(async () => (await client.xlen('replies:c')) === 2, 'two error replies');
    const replies = await repliesOn(client, 'replies:c');
    const byId = Object.fromEntries(replies.map((reply) => [reply.id, reply.packet]));
    expect(byId['corr-div']).toMatchObject({ err: { code: 'DIVISION_BY_ZERO', message: 'cannot divide by zero' }, isDisposed: true });
    expect(byId['corr-div']).not.toHaveProperty('response');
    expect(byId['corr-crash']).toMatchObject({ err: { status: 'error', message: 'Internal server error' }, isDisposed: true });
    await waitFor(async () => (await pendingRows(client, 'divide', 'rpc')).length + (await pendingRows(client, 'crash', 'rpc')).length === 0, 'error requests acked');
  });

  it('a request whose pattern has no message handler gets NO_MESSAGE_HANDLER and is acked', async () => {
    await request(client, 'sum', 'no-such-pattern', 1, 'corr-none', 'replies:d');
    await waitFor(async () => (await client.xlen('replies:d')) === 1, 'one reply');
    expect(await repliesOn(client, 'replies:d')).toEqual([
      { id: 'corr-none', packet: { err: 'There is no matching message handler defined in the remote service.', isDisposed: true } },
    ]);
    await waitFor(async () => (await pendingRows(client, 'sum', 'rpc')).length === 0, 'acked');
  });

  it('a request on a stream only event handlers read is an event to them: handled, acked, never answered', async () => {
    await request(client, 'notify', 'notify', { n: 7 }, 'corr-event', 'replies:e');
    await waitFor(() => notified.length === 1, 'the event handler');
    expect(notified).toEqual([{ n: 7 }]);
    await waitFor(async () => (await pendingRows(client, 'notify', 'rpc')).length === 0, 'acked');
    // Another group's message handler may answer it; this one must not race it with "no handler".
    expect(await client.exists('replies:e')).toBe(0);
  });
});
