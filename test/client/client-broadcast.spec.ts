import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { lastValueFrom, Observable, scan, take, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StreamFields } from '../../src/codec/wire-format.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord, RedisStreamsRecordBuilder } from '../../src/client/redis-streams-record.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { jsonReply, settleWithin, StreamResponder, type ReplyEntryFields } from '../helpers/stream-responder.js';

@Controller()
class ServiceA {
  @MessagePattern({ cmd: 'broadcast' })
  replyBroadcast(): Observable<number> {
    return new Observable((observer) => {
      observer.next(1);
      observer.complete();
    });
  }

  @MessagePattern('who')
  who(): string {
    return 'a';
  }
}

@Controller()
class ServiceB {
  @MessagePattern({ cmd: 'broadcast' })
  replyBroadcast(): number {
    return 1;
  }

  @MessagePattern('who')
  who(): string {
    return 'b';
  }
}

describe('broadcast: two services (two groups) answer one request', () => {
  const redis = useRedisServer();
  const services: RunningServer[] = [];
  let client: RedisStreamsClient;

  beforeAll(async () => {
    // Two deployments, each with its own group on the same streams: both get every request.
    services.push(await startServer({ connection: redis.server.url, group: 'service-a', blockMs: 200 }, [ServiceA]));
    services.push(await startServer({ connection: redis.server.url, group: 'service-b', blockMs: 200 }, [ServiceB]));
    client = new RedisStreamsClient({ connection: redis.server.url, timeout: 10_000 });
  });
  afterAll(async () => {
    await client?.close();
    for (const service of services) await service.app.close();
  });

  it('Nest\'s broadcast test: replies: 2 collects both answers (scan, take(2))', async () => {
    const total = client.send<number>({ cmd: 'broadcast' }, new RedisStreamsRecord({}, { replies: 2 })).pipe(
      scan((a, b) => a + b),
      take(2),
    );
    expect(await lastValueFrom(total)).toBe(2);
  });

  it('replies: 2 emits each service\'s answer and completes after the second', async () => {
    const answers = await lastValueFrom(client.send<string>('who', new RedisStreamsRecordBuilder({}).setReplies(2).build()).pipe(toArray()));
    expect([...answers].sort()).toEqual(['a', 'b']);
  });

  it('without replies, the first answer wins and the call completes', async () => {
    const answers = await lastValueFrom(client.send<string>('who', {}).pipe(toArray()));
    expect(answers).toHaveLength(1);
    expect(['a', 'b']).toContain(answers[0]);
  });

  it('fewer services than replies: the answers that came are emitted, then RedisStreamsTimeoutError says how many', async () => {
    const seen: string[] = [];
    const call = client.send<string>('who', new RedisStreamsRecord({}, { replies: 3, timeout: 1_000 }));
    const { error } = await settleWithin(
      new Promise((resolve, reject) => call.subscribe({ next: (value) => seen.push(value), error: reject, complete: () => resolve(undefined) })),
      10_000,
    );
    expect([...seen].sort()).toEqual(['a', 'b']);
    expect(error).toMatchObject({ name: 'RedisStreamsTimeoutError', pattern: 'who', timeoutMs: 1_000, expectedReplies: 3, receivedReplies: 2 });
    expect((error as Error).message).toBe('2 of 3 replies to "who" within 1000 ms');
  });

  it('rejects a bad replies count before writing anything, naming the option', async () => {
    for (const replies of [0, 1.5, '2']) {
      await expect(lastValueFrom(client.send('who', new RedisStreamsRecord({}, { replies: replies as number })))).rejects.toMatchObject({
        name: 'RedisStreamsOptionError',
        option: 'replies',
      });
    }
  });
});

describe('replies from several responders, each streaming values before its final reply', () => {
  const redis = useRedisServer();
  const closers: (() => Promise<void> | void)[] = [];
  const respond = (stream: string, answer: (request: StreamFields) => ReplyEntryFields[]) => {
    const reader = redis.server.client();
    const responder = new StreamResponder(reader, redis.client, stream, answer);
    closers.push(async () => {
      await responder.stop();
      reader.disconnect();
    });
  };
  const client = () => {
    const created = new RedisStreamsClient({ connection: redis.server.url, timeout: 10_000 });
    closers.push(() => created.close());
    return created;
  };
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('replies: 2 passes every non-final value through and completes after the second final reply', async () => {
    await redis.client.xadd('streamed', '*', 'seed', '1');
    // Two responders' replies as they land on the reply stream: the first is done before the second starts.
    respond('streamed', (request) => [
      jsonReply(request, { response: 'a1', isDisposed: false }),
      jsonReply(request, { response: 'a2', isDisposed: false }),
      jsonReply(request, { isDisposed: true }),
      jsonReply(request, { response: 'b1', isDisposed: false }),
      jsonReply(request, { response: 'b2', isDisposed: true }),
    ]);
    const values = await lastValueFrom(client().send<string>('streamed', new RedisStreamsRecord(1, { replies: 2 })).pipe(toArray()));
    // A final reply without a response adds no value; one with a response adds it.
    expect(values).toEqual(['a1', 'a2', 'b1', 'b2']);
  });

  it('interleaved streams of two responders: every value, in arrival order', async () => {
    await redis.client.xadd('interleaved', '*', 'seed', '1');
    respond('interleaved', (request) => [
      jsonReply(request, { response: 'a1', isDisposed: false }),
      jsonReply(request, { response: 'b1', isDisposed: false }),
      jsonReply(request, { response: 'a2', isDisposed: true }),
      jsonReply(request, { response: 'b2', isDisposed: false }),
      jsonReply(request, { isDisposed: true }),
    ]);
    const values = await lastValueFrom(client().send<string>('interleaved', new RedisStreamsRecord(1, { replies: 2 })).pipe(toArray()));
    expect(values).toEqual(['a1', 'b1', 'a2', 'b2']);
  });

  it('an error reply from one responder fails the call (as Nest does), even after another one answered', async () => {
    await redis.client.xadd('one-fails', '*', 'seed', '1');
    respond('one-fails', (request) => [
      jsonReply(request, { response: 'a', isDisposed: true }),
      jsonReply(request, { err: { status: 'error', message: 'out of stock' }, isDisposed: true }),
    ]);
    const seen: unknown[] = [];
    const call = client().send('one-fails', new RedisStreamsRecord(1, { replies: 2 }));
    const { error } = await settleWithin(
      new Promise((resolve, reject) => call.subscribe({ next: (value) => seen.push(value), error: reject, complete: () => resolve(undefined) })),
      10_000,
    );
    expect(seen).toEqual(['a']);
    expect(error).toEqual({ status: 'error', message: 'out of stock' });
  });
});
