import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { makeIdle } from '../helpers/claim-fixtures.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** Bytes that are not UTF-8 (a lone 0xff, a NUL, a lone continuation byte). */
const BINARY = Buffer.from([0xff, 0x00, 0x80, 0x41]);
/** As XADD stored them: integer-like names after others, a duplicate name, binary bytes in a name and a value. */
const STORED: [string | Buffer, string | Buffer][] = [
  ['b', 'first'],
  ['10', 'ten'],
  ['2', 'two'],
  ['a', 'x'],
  ['a', 'y'],
  [BINARY, 'binary name'],
  ['bin', BINARY],
];
const asBuffers = STORED.map(([name, value]) => [Buffer.from(name), Buffer.from(value)]);
const asText = STORED.map(([name, value]) => [name.toString(), value.toString()]);

const seen: Record<string, { data: unknown; id: string; deliveryCount: number }[]> = {};
function record(name: string, data: unknown, ctx: RedisStreamsContext): void {
  (seen[name] ??= []).push({ data, id: ctx.getId(), deliveryCount: ctx.getDeliveryCount() });
}

@Controller()
class RawController {
  @EventPattern<string>('as-map', { raw: true })
  onMap(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('as-map', data, ctx);
  }

  @EventPattern<string>('as-pairs', { raw: 'pairs' })
  onPairs(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('as-pairs', data, ctx);
  }

  @EventPattern<string>('as-bytes', { raw: 'buffers' })
  onBytes(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('as-bytes', data, ctx);
  }

  /** Fails its first delivery: the retry (claim-retry script) must bring the same bytes back. */
  @EventPattern<string>('retry-bytes', { raw: 'buffers', retry: { type: 'fixed', delay: 50 } })
  onRetryBytes(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('retry-bytes', data, ctx);
    if (ctx.getDeliveryCount() === 1) throw new Error('first delivery fails');
  }

  /** Same group as the byte handler, so read by the same (byte) reads: the JSON must decode as text. */
  @EventPattern<string>('decoded')
  onDecoded(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    record('decoded', data, ctx);
  }
}

describe("raw handlers: extras.raw 'pairs' (stream order, duplicates) and 'buffers' (exact bytes)", () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  beforeEach(async () => {
    await redis.client.flushall();
    for (const key of Object.keys(seen)) delete seen[key];
  });
  afterEach(async () => {
    await running?.app.close();
    running = undefined;
  });

  const start = () =>
    startServer(
      { connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 100, recovery: { minIdleTime: 1_000, interval: 100 } },
      [RawController],
    );

  it('a read entry reaches each raw handler in its form; a decoded handler of the same byte reads still gets text', async () => {
    running = await start();
    for (const stream of ['as-map', 'as-pairs', 'as-bytes']) await redis.client.xadd(stream, '*', ...STORED.flat());
    await redis.client.xadd('decoded', '*', 'pattern', 'decoded', 'data', JSON.stringify({ text: 'grüße € 😀' }));

    await waitFor(() => ['as-map', 'as-pairs', 'as-bytes', 'decoded'].every((name) => seen[name]?.length === 1), 'every handler');
    expect(seen['as-bytes']![0]!.data).toEqual(asBuffers);
    expect(seen['as-pairs']![0]!.data).toEqual(asText);
    expect({ ...(seen['as-map']![0]!.data as object) }).toEqual(Object.fromEntries(asText));
    expect(seen.decoded![0]!.data).toEqual({ text: 'grüße € 😀' });
    for (const stream of ['as-map', 'as-pairs', 'as-bytes', 'decoded']) {
      await waitFor(async () => (await pendingCount(redis.client, stream, 'g')) === 0, `${stream} acked`);
    }
  });

  it('an entry taken by recovery from a dead consumer reaches the byte handler byte for byte', async () => {
    await redis.client.xgroup('CREATE', 'as-bytes', 'g', '0', 'MKSTREAM');
    const id = (await redis.client.xadd('as-bytes', '*', ...STORED.flat())) as string;
    await redis.client.xreadgroup('GROUP', 'g', 'dead', 'STREAMS', 'as-bytes', '>');
    await makeIdle(redis.client, 'as-bytes', 'g', 'dead', [id]);

    running = await start();
    await waitFor(() => seen['as-bytes']?.length === 1, 'the recovered entry');
    expect(seen['as-bytes']![0]).toEqual({ data: asBuffers, id, deliveryCount: 2 });
    await waitFor(async () => (await pendingCount(redis.client, 'as-bytes', 'g')) === 0, 'acked');
  });

  it('an own pending entry re-read at start-up reaches the byte handler byte for byte', async () => {
    await redis.client.xgroup('CREATE', 'as-bytes', 'g', '0', 'MKSTREAM');
    const id = (await redis.client.xadd('as-bytes', '*', ...STORED.flat())) as string;
    await redis.client.xreadgroup('GROUP', 'g', 'w1', 'STREAMS', 'as-bytes', '>');

    running = await start();
    await waitFor(() => seen['as-bytes']?.length === 1, 'the re-read entry');
    expect(seen['as-bytes']![0]).toEqual({ data: asBuffers, id, deliveryCount: 2 });
  });

  it('an entry retried by the retry policy (claim-retry script) reaches the byte handler byte for byte', async () => {
    running = await start();
    const id = (await redis.client.xadd('retry-bytes', '*', ...STORED.flat())) as string;
    await waitFor(() => seen['retry-bytes']?.length === 2, 'the retried delivery');
    expect(seen['retry-bytes']).toEqual([
      { data: asBuffers, id, deliveryCount: 1 },
      { data: asBuffers, id, deliveryCount: 2 },
    ]);
    await waitFor(async () => (await pendingCount(redis.client, 'retry-bytes', 'g')) === 0, 'acked');
  });

  it("rejects another extras.raw, naming it", async () => {
    const { resolveServerOptions } = await import('../../src/server/options.js');
    const { resolveHandlerExtras } = await import('../../src/server/handler-extras.js');
    const server = resolveServerOptions({ connection: redis.server.url, group: 'g' });
    expect(() => resolveHandlerExtras('p', { raw: 'bytes' }, server)).toThrow(/extras\.raw.*"pairs" or "buffers"/);
    expect(resolveHandlerExtras('p', { raw: 'pairs' }, server).raw).toBe('pairs');
  });
});
