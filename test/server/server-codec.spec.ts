import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeReply } from '../../src/codec/reply.js';
import type { StreamDeserializer, StreamEntryOrigin } from '../../src/codec/stream-deserializer.js';
import { fieldsFromArray, type StreamFields } from '../../src/codec/wire-format.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const seen: Array<{ data: unknown; headers: Record<string, string>; pattern: string }> = [];
const origins: StreamEntryOrigin[] = [];

/** A foreign format: `kind`, `body` (key=value;…), `trace`, and `corr` / `reply` for requests. */
class KeyValueDeserializer implements StreamDeserializer {
  async deserialize(fields: StreamFields, origin: StreamEntryOrigin) {
    origins.push(origin);
    await Promise.resolve(); // may be async
    const data = Object.fromEntries((fields.body ?? '').split(';').filter(Boolean).map((pair) => pair.split('=')));
    return { pattern: fields.kind, data, headers: { trace: fields.trace ?? '' }, id: fields.corr, replyTo: fields.reply };
  }
}

@Controller()
class CodecController {
  @EventPattern<string>('kv')
  onKv(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    seen.push({ data, headers: { ...ctx.getHeaders() }, pattern: ctx.getPattern() });
  }

  @MessagePattern('kv-rpc')
  echo(@Payload() data: Record<string, string>): Record<string, string> {
    return data;
  }
}

describe('RedisStreamsServer: pluggable codec', () => {
  const redis = useRedisServer();
  let running: RunningServer;

  beforeAll(async () => {
    running = await startServer(
      {
        connection: redis.server.url,
        group: 'g',
        consumer: 'c',
        deserializer: new KeyValueDeserializer(),
        serializer: { serialize: (packet: { response?: unknown }) => ({ ...packet, response: { wrapped: packet.response } }) },
      },
      [CodecController],
    );
  });
  afterAll(async () => {
    await running.app.close();
  });

  it('a custom (async) deserializer decodes foreign entries and gets stream and id', async () => {
    const id = (await redis.client.xadd('kv', '*', 'kind', 'kv', 'body', 'item=kettle;qty=1', 'trace', 't-1')) as string;
    await waitFor(() => seen.length === 1, 'entry handled');
    expect(seen[0]).toEqual({ data: { item: 'kettle', qty: '1' }, headers: { trace: 't-1' }, pattern: 'kv' });
    expect(origins).toContainEqual({ stream: 'kv', id });
    await waitFor(async () => (await pendingRows(redis.client, 'kv', 'g')).length === 0, 'acked');
  });

  it('requests decoded by it are answered, and the custom serializer shapes the reply packet', async () => {
    await redis.client.xadd('kv-rpc', '*', 'kind', 'kv-rpc', 'body', 'a=1', 'corr', 'c-9', 'reply', 'kv:replies');
    await waitFor(async () => (await redis.client.xlen('kv:replies')) === 1, 'reply written');
    const [[, flat]] = (await redis.client.xrange('kv:replies', '-', '+')) as Array<[string, string[]]>;
    expect(decodeReply(fieldsFromArray(flat))).toEqual({ id: 'c-9', packet: { response: { wrapped: { a: '1' } }, isDisposed: true } });
  });
});
