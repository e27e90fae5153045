import { Controller } from '@nestjs/common';
import { MessagePattern, Payload, RpcException, type OutgoingResponse } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StreamFields } from '../../src/codec/wire-format.js';
import { RedisStreamsReplyDecodeError } from '../../src/client/errors.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import type { RedisStreamsClientOptions } from '../../src/client/redis-streams-client.options.js';
import type { RawReply } from '../../src/client/raw-reply.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { settleWithin, StreamResponder, type ReplyEntryFields } from '../helpers/stream-responder.js';

/** Bytes that are not UTF-8 (a lone continuation byte, 0xff, 0xfe) with a NUL among them. */
const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x41]);

/**
 * The pair docs/client.md shows: a Buffer response goes out as bytes after one byte "final?";
 * any other packet (errors) as JSON, whose first byte is "{".
 */
const framedBytes = {
  serialize: (p: OutgoingResponse) =>
    Buffer.isBuffer(p.response) ? Buffer.concat([Buffer.from([p.isDisposed === false ? 0 : 1]), p.response]) : p,
};
const framedReplies = {
  deserialize: ({ packet }: RawReply) =>
    packet !== undefined && packet[0]! <= 1 ? { response: packet.subarray(1), isDisposed: packet[0] === 1 } : JSON.parse(String(packet)),
};

@Controller()
class ImageController {
  @MessagePattern('thumbnail')
  thumbnail(@Payload() n: number): Buffer {
    if (n < 0) throw new RpcException({ code: 'NEGATIVE', n });
    return Buffer.concat([NOT_UTF8, Buffer.from([n])]);
  }
}

describe('replies that are bytes (Nest binary-redis: a responder answers with non-UTF-8 bytes)', () => {
  const redis = useRedisServer();
  const closers: (() => Promise<void> | void)[] = [];
  const client = (options: RedisStreamsClientOptions = {}) => {
    const created = new RedisStreamsClient({ connection: redis.server.url, timeout: 60_000, ...options });
    closers.push(() => created.close());
    return created;
  };
  const respond = (stream: string, answer: (request: StreamFields) => ReplyEntryFields[]) => {
    const reader = redis.server.client();
    const responder = new StreamResponder(reader, redis.client, stream, answer);
    closers.push(async () => {
      await responder.stop();
      reader.disconnect();
    });
    return responder;
  };
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('a reply the client cannot decode fails its request at once with RedisStreamsReplyDecodeError, not after the timeout', async () => {
    await redis.client.xadd('bytes.json', '*', 'seed', '1');
    const responder = respond('bytes.json', (request) => [['id', request.id as string, 'packet', NOT_UTF8]]);
    const c = client();
    // The timeout is 60 s: only an immediate failure settles within the bound.
    const { error } = await settleWithin(lastValueFrom(c.send('bytes.json', 1)), 10_000);
    expect(error).toBeInstanceOf(RedisStreamsReplyDecodeError);
    expect(error).toMatchObject({
      name: 'RedisStreamsReplyDecodeError',
      pattern: 'bytes.json',
      correlationId: responder.requests[0]?.id,
      replyStream: c.replyStream,
    });
    expect((error as Error).message).toMatch(/"packet" is not JSON/);
    expect((error as RedisStreamsReplyDecodeError).entryId).toMatch(/^\d+-\d+$/);
  });

  it('rawReplies hands the reply entry\'s fields as Buffers to the deserializer: the caller gets the exact bytes', async () => {
    await redis.client.xadd('bytes.raw', '*', 'seed', '1');
    respond('bytes.raw', (request) => [['id', request.id as string, 'packet', NOT_UTF8, 'format', 'png']]);
    const seen: RawReply[] = [];
    const c = client({
      rawReplies: true,
      deserializer: {
        deserialize: (reply: RawReply) => {
          seen.push(reply);
          return { response: reply.packet, isDisposed: true };
        },
      },
    });
    const response = await lastValueFrom(c.send<Buffer>('bytes.raw', 1));
    expect(Buffer.isBuffer(response)).toBe(true);
    expect(response.equals(NOT_UTF8)).toBe(true);
    const [reply] = seen;
    expect(typeof reply?.id).toBe('string');
    expect(reply?.fields.map(([name]) => name.toString())).toEqual(['id', 'packet', 'format']);
    expect(reply?.fields[1]?.[1].equals(NOT_UTF8)).toBe(true);
    expect(reply?.fields[2]?.[1]).toEqual(Buffer.from('png'));
  });

  it('rawReplies without a deserializer of yours: the caller gets the raw reply itself', async () => {
    await redis.client.xadd('bytes.default', '*', 'seed', '1');
    respond('bytes.default', (request) => [['id', request.id as string, 'packet', NOT_UTF8]]);
    const reply = await lastValueFrom(client({ rawReplies: true }).send<RawReply>('bytes.default', 1));
    expect(reply.packet?.equals(NOT_UTF8)).toBe(true);
  });

  it('a deserializer that throws (or rejects) fails the request at once with RedisStreamsReplyDecodeError carrying its error', async () => {
    await redis.client.xadd('bytes.throws', '*', 'seed', '1');
    respond('bytes.throws', (request) => [['id', request.id as string, 'packet', NOT_UTF8]]);
    const thrown = new Error('not a thumbnail');
    const failing = (deserialize: () => unknown) => client({ rawReplies: true, deserializer: { deserialize } }).send('bytes.throws', 1);
    for (const send of [
      failing(() => {
        throw thrown;
      }),
      failing(() => Promise.reject(thrown)),
    ]) {
      const { error } = await settleWithin(lastValueFrom(send), 10_000);
      expect(error).toBeInstanceOf(RedisStreamsReplyDecodeError);
      expect(error).toMatchObject({ pattern: 'bytes.throws', cause: thrown });
      expect((error as Error).message).toContain('not a thumbnail');
    }
  });

  describe('a RedisStreamsServer whose serializer writes bytes', () => {
    let running: RunningServer;
    beforeAll(async () => {
      running = await startServer({ connection: redis.server.url, group: 'images', blockMs: 200, serializer: framedBytes }, [ImageController]);
    });
    afterAll(async () => {
      await running?.app.close();
    });

    it('a raw-replies client gets the handler\'s bytes exactly', async () => {
      const c = client({ rawReplies: true, deserializer: framedReplies });
      const response = await lastValueFrom(c.send<Buffer>('thumbnail', 7));
      expect(Buffer.isBuffer(response)).toBe(true);
      expect(response.equals(Buffer.concat([NOT_UTF8, Buffer.from([7])]))).toBe(true);
    });

    it('the same client gets the handler\'s RpcException payload, written as JSON', async () => {
      const c = client({ rawReplies: true, deserializer: framedReplies });
      await expect(lastValueFrom(c.send('thumbnail', -1))).rejects.toEqual({ code: 'NEGATIVE', n: -1 });
    });

    it('a JSON client fails such a reply at once, naming it', async () => {
      const { error } = await settleWithin(lastValueFrom(client().send('thumbnail', 1)), 10_000);
      expect(error).toMatchObject({ name: 'RedisStreamsReplyDecodeError', pattern: 'thumbnail' });
    });
  });
});
