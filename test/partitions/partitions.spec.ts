import { Controller, type INestMicroservice, type Type } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient, type RedisStreamsClientOptions } from '../../src/index.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsOptionError, RedisStreamsPartitionMismatchError } from '../../src/errors.js';
import {
  MAX_PARTITIONS,
  partitionIndexOf,
  partitionsMetadataKey,
  partitionStreamKey,
  partitionStreamKeys,
  sharedSlotsOf,
} from '../../src/partitions/partition-keys.js';
import { hashSlotOf } from '../../src/redis/keys.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { pendingCount } from '../helpers/stream-state.js';
import { partitionTotals, type PartitionedInfoOutput } from '../../src/cli/partition-totals.js';
import { partitionedInfoView } from '../../src/cli/views/partitioned-info.view.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const PARTITIONS = 4;
const seen: { n: number; key?: string; stream: string }[] = [];

@Controller()
class OrdersController {
  @EventPattern<string>('orders', { partitions: PARTITIONS, maxDeliveries: 1, minIdleTime: 100 })
  onOrder(@Payload() order: { n: number; key?: string; poison?: boolean }, @Ctx() ctx: RedisStreamsContext): void {
    if (order.poison) throw new Error(`order ${order.n} is poison`);
    seen.push({ n: order.n, key: order.key, stream: ctx.getStream() });
  }

  @MessagePattern<string>('quotes', { partitions: 3 })
  quote(@Payload() item: string, @Ctx() ctx: RedisStreamsContext): { item: string; stream: string } {
    return { item, stream: ctx.getStream() };
  }
}

@Controller()
class OtherCountController {
  @EventPattern<string>('orders', { partitions: 2 })
  onOrder(): void {}
}

describe('partition keys (pure)', () => {
  it('names partition i of a stream "<stream>:p<i>", each on its own hash slot, the stream itself when not partitioned', () => {
    expect(partitionStreamKeys('orders', 4)).toEqual(['orders:p0', 'orders:p1', 'orders:p2', 'orders:p3']);
    expect(partitionStreamKeys('orders', 1)).toEqual(['orders']);
    expect(partitionsMetadataKey('orders')).toBe('{orders}:partitions');
    expect(new Set(partitionStreamKeys('orders', 8).map(hashSlotOf)).size).toBe(8);
    expect(sharedSlotsOf('orders', 8)).toEqual([]);
  });

  it('hashes a partition key with FNV-1a 32 of its UTF-8 bytes, mod the count (known vectors)', () => {
    // FNV-1a 32: "" → 0x811c9dc5, "a" → 0xe40c292c, "foobar" → 0xbf9cf968, "é" (UTF-8 c3 a9) → 0x1e9de8c1.
    expect(partitionIndexOf('', 1024)).toBe(0x811c9dc5 % 1024);
    expect(partitionIndexOf('a', 1000)).toBe(0xe40c292c % 1000);
    expect(partitionIndexOf('foobar', 7)).toBe(0xbf9cf968 % 7);
    expect(partitionIndexOf('é', 1000)).toBe(0x1e9de8c1 % 1000);
  });
});

describe('partitioned streams (real redis-server)', () => {
  const redis = useRedisServer();
  const opened: { close(): Promise<void> | void }[] = [];

  async function startServer(controllers: Type[], options: Partial<RedisStreamsServerOptions> = {}): Promise<INestMicroservice> {
    const moduleRef = await Test.createTestingModule({ controllers }).compile();
    const server = new RedisStreamsServer({
      connection: redis.server.url,
      group: 'billing',
      consumer: 'c1',
      blockMs: 100,
      recovery: { interval: 100, minIdleTime: 100 },
      ...options,
    });
    const app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    opened.push(app);
    await app.listen();
    return app;
  }

  function client(options: RedisStreamsClientOptions = {}): RedisStreamsClient {
    const created = new RedisStreamsClient({ connection: redis.server.url, partitions: { orders: PARTITIONS, quotes: 3 }, ...options });
    opened.push(created);
    return created;
  }

  beforeAll(ensureCompiled, 300_000);

  beforeEach(async () => {
    await redis.client.flushall();
    seen.length = 0;
  });

  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });

  it('every id emitted over 4 partitions is handled once, round robin spreads evenly, every partition ends with nothing pending', async () => {
    await startServer([OrdersController]);
    const producer = client();
    const ids = await Promise.all(Array.from({ length: 200 }, (_, n) => lastValueFrom(producer.emit<string>('orders', { n }))));
    await waitFor(() => seen.length >= 200, '200 orders handled');
    expect(seen.map((entry) => entry.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, n) => n));
    const byStream = new Map<string, number>();
    for (const { stream } of seen) byStream.set(stream, (byStream.get(stream) ?? 0) + 1);
    expect(Object.fromEntries(byStream)).toEqual({ 'orders:p0': 50, 'orders:p1': 50, 'orders:p2': 50, 'orders:p3': 50 });
    // Every id was written to exactly one partition.
    const written = (await Promise.all(partitionStreamKeys('orders', PARTITIONS).map((key) => redis.client.xrange(key, '-', '+')))).flat();
    expect(written.map(([id]) => id).sort()).toEqual([...ids].sort());
    await waitFor(async () => {
      const pending = await Promise.all(partitionStreamKeys('orders', PARTITIONS).map((key) => pendingCount(redis.client, key, 'billing')));
      return pending.every((count) => count === 0);
    }, 'nothing pending on any partition');
    expect(await redis.client.exists('orders')).toBe(0);
    expect(await redis.client.get('{orders}:partitions')).toBe(String(PARTITIONS));
  });

  it('one partitionKey always lands in one partition, in the order emitted; the idempotencyKey is not needed for it', async () => {
    await startServer([OrdersController]);
    const producer = client();
    for (let n = 0; n < 20; n++) {
      for (const key of ['customer-7', 'customer-8']) await lastValueFrom(producer.emit('orders', new RedisStreamsRecord({ n, key }, { partitionKey: key })));
    }
    await waitFor(() => seen.length >= 40, '40 orders handled');
    for (const key of ['customer-7', 'customer-8']) {
      const stream = partitionStreamKey('orders', partitionIndexOf(key, PARTITIONS));
      const entries = await redis.client.xrange(stream, '-', '+');
      const mine = entries.map(([, fields]) => JSON.parse(fields[fields.indexOf('data') + 1] as string) as { n: number; key: string }).filter((order) => order.key === key);
      expect(mine.map((order) => order.n)).toEqual(Array.from({ length: 20 }, (_, n) => n));
      expect(new Set(seen.filter((entry) => entry.key === key).map((entry) => entry.stream))).toEqual(new Set([stream]));
    }
  });

  it('request/reply over partitions: each request lands in one partition, the reply comes back as usual', async () => {
    await startServer([OrdersController]);
    const requester = client();
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, n) => lastValueFrom(requester.send<{ item: string; stream: string }>('quotes', new RedisStreamsRecord(`item-${n}`, { partitionKey: `item-${n}` })))),
    );
    expect(replies.map((reply) => reply.item)).toEqual(Array.from({ length: 6 }, (_, n) => `item-${n}`));
    expect(replies.map((reply) => reply.stream)).toEqual(Array.from({ length: 6 }, (_, n) => partitionStreamKey('quotes', partitionIndexOf(`item-${n}`, 3))));
  });

  it('a poison entry is dead-lettered to its own partition\'s dead-letter stream', async () => {
    await startServer([OrdersController]);
    const producer = client();
    const id = await lastValueFrom(producer.emit<string>('orders', new RedisStreamsRecord({ n: 1, poison: true }, { partitionKey: 'poison' })));
    const stream = partitionStreamKey('orders', partitionIndexOf('poison', PARTITIONS));
    const deadLetters = `{${stream}}:dead`;
    await waitFor(async () => (await redis.client.xlen(deadLetters)) === 1, `the poison entry in ${deadLetters}`, { timeout: 10_000 });
    const [[, fields]] = (await redis.client.xrange(deadLetters, '-', '+')) as [[string, string[]]];
    expect(fields[fields.indexOf('dlq:stream') + 1]).toBe(stream);
    expect(fields[fields.indexOf('dlq:id') + 1]).toBe(id);
    for (const other of partitionStreamKeys('orders', PARTITIONS)) {
      if (other !== stream) expect(await redis.client.exists(`{${other}}:dead`)).toBe(0);
    }
    expect(await pendingCount(redis.client, stream, 'billing')).toBe(0);
    // The CLI lists it under its partition (the default dead-letter key of "orders:p<i>").
    const listed = await runCli(['dlq', 'list', stream, '--url', redis.server.url]);
    expect(listed.stderr).toBe('');
    const page = JSON.parse(listed.stdout) as { deadLetterKey: string; deadLetters: { sourceId: string; stream: string }[] };
    expect(page.deadLetterKey).toBe(deadLetters);
    expect(page.deadLetters.map((letter) => letter.sourceId)).toEqual([id]);
  });

  it('CLI info <stream> of a partitioned stream shows each partition and the total (JSON; the same as a table at a terminal)', async () => {
    await startServer([OrdersController]);
    const producer = client();
    for (let n = 0; n < 10; n++) await lastValueFrom(producer.emit('orders', { n }));
    await waitFor(() => seen.length >= 10, '10 orders handled');
    const run = await runCli(['info', 'orders', '--group', 'billing', '--url', redis.server.url]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const info = JSON.parse(run.stdout) as PartitionedInfoOutput;
    expect(info.partitionCount).toBe(PARTITIONS);
    expect(info.partitions.map((partition) => [partition.key, partition.stream.length])).toEqual([
      ['orders:p0', 3],
      ['orders:p1', 3],
      ['orders:p2', 2],
      ['orders:p3', 2],
    ]);
    expect(info.total).toEqual(partitionTotals(info.partitions, 'billing'));
    expect(info.total).toMatchObject({ length: 10, groups: [{ name: 'billing', consumers: 1, pending: 0 }], group: 'billing', consumers: [{ name: 'c1', pending: 0 }] });
    const lines = partitionedInfoView(info).split('\n');
    expect(lines[0]).toMatch(/^stream orders: 4 partitions, 10 entries(, 10 added in all)?, 1 group\(s\)$/);
    expect(lines.filter((line) => /^(orders:p\d|total) /.test(line)).map((line) => line.split(/\s+/).slice(0, 2).join(' '))).toEqual([
      'orders:p0 3',
      'orders:p1 3',
      'orders:p2 2',
      'orders:p3 2',
      'total 10',
    ]);
    expect(lines.some((line) => /^billing\s+total\s+1\s+0\b/.test(line))).toBe(true);
    // A stream that is neither a stream nor partitioned is still the usual one-line error.
    const missing = await runCli(['info', 'nothing', '--url', redis.server.url]);
    expect(missing.stderr).toBe('error: stream "nothing" does not exist\n');
  });

  it('CLI info of a partitioned stream some partitions of which have no key yet (producers ahead of the workers): those show empty and missing', async () => {
    await redis.client.set(partitionsMetadataKey('early'), '3');
    const [first, , third] = partitionStreamKeys('early', 3);
    await redis.client.xadd(first as string, '*', 'n', '1');
    await redis.client.xadd(first as string, '*', 'n', '2');
    await redis.client.xadd(third as string, '*', 'n', '3');
    const run = await runCli(['info', 'early', '--url', redis.server.url]);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const info = JSON.parse(run.stdout) as PartitionedInfoOutput;
    expect(info.partitions.map((partition) => [partition.key, partition.missing, partition.stream.length, partition.groups])).toEqual([
      ['early:p0', undefined, 2, []],
      ['early:p1', true, 0, []],
      ['early:p2', undefined, 1, []],
    ]);
    expect(info.total).toMatchObject({ length: 3, groups: [] });
    const lines = partitionedInfoView(info).split('\n');
    expect(lines.filter((line) => line.startsWith('early:p1')).map((line) => line.split(/\s{2,}/).slice(0, 2))).toEqual([['early:p1 (no key yet)', '0']]);
  });

  it('a client with another count than the workers fails its emit with RedisStreamsPartitionMismatchError and writes nothing', async () => {
    await startServer([OrdersController]);
    const producer = client({ partitions: { orders: 2 } });
    const error = await lastValueFrom(producer.emit('orders', { n: 1 })).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RedisStreamsPartitionMismatchError);
    expect(error).toMatchObject({ stream: 'orders', partitions: 2, recorded: PARTITIONS, metadataKey: '{orders}:partitions' });
    const lengths = await Promise.all([...partitionStreamKeys('orders', PARTITIONS), 'orders'].map((key) => redis.client.xlen(key)));
    expect(lengths).toEqual([0, 0, 0, 0, 0]);
    // A send fails the same way.
    const sendError = await lastValueFrom(client({ partitions: { quotes: 5 } }).send('quotes', 'kettle')).catch((caught: unknown) => caught);
    expect(sendError).toBeInstanceOf(RedisStreamsPartitionMismatchError);
  });

  it('a worker with another count than the one recorded fails listen() with RedisStreamsPartitionMismatchError', async () => {
    const producer = client();
    await lastValueFrom(producer.emit('orders', { n: 1 }));
    const failed = await startServer([OtherCountController]).catch((caught: unknown) => caught);
    expect(failed).toBeInstanceOf(RedisStreamsPartitionMismatchError);
    expect(failed).toMatchObject({ stream: 'orders', partitions: 2, recorded: PARTITIONS });
  });

  it('bad partition counts and hash-tagged streams are named option errors, on both sides', async () => {
    for (const bad of [0, 1.5, MAX_PARTITIONS + 1, '4']) {
      expect(() => new RedisStreamsClient({ partitions: { orders: bad as number } })).toThrow(RedisStreamsOptionError);
      expect(() => new RedisStreamsClient({ partitions: { orders: bad as number } })).toThrow(/"partitions\.orders"/);
    }
    expect(() => new RedisStreamsClient({ partitions: [] as unknown as Record<string, number> })).toThrow(/"partitions"/);
    expect(() => new RedisStreamsClient({ partitions: { '{orders}:eu': 4 } })).toThrow(/"partitions\.\{orders\}:eu".*hash tag "\{orders\}"/);
    expect(() => new RedisStreamsClient({ streamPrefix: '{app}:', partitions: { orders: 4 } })).toThrow(RedisStreamsOptionError);
    expect(() => new RedisStreamsClient({ partitions: { '{orders}:eu': 1 } })).not.toThrow();

    @Controller()
    class ZeroController {
      @EventPattern<string>('orders', { partitions: 0 })
      onOrder(): void {}
    }
    await expect(startServer([ZeroController])).rejects.toThrow(/"extras\.partitions \(handler "orders"\)": must be an integer between 1 and 1024/);

    // The bound the metadata readers hold a recorded count to: no side can configure more.
    @Controller()
    class TooManyController {
      @EventPattern<string>('orders', { partitions: MAX_PARTITIONS + 1 })
      onOrder(): void {}
    }
    await expect(startServer([TooManyController])).rejects.toThrow(/"extras\.partitions \(handler "orders"\)": must be an integer between 1 and 1024.*got 1025/);

    @Controller()
    class TaggedController {
      @EventPattern<string>('{orders}:eu', { partitions: 2 })
      onOrder(): void {}
    }
    await expect(startServer([TaggedController])).rejects.toThrow(/"extras\.partitions \(handler "\{orders\}:eu"\)".*hash tag/);

    @Controller()
    class DisagreeingController {
      @EventPattern<string>('orders', { partitions: 2 })
      billing(): void {}

      @EventPattern<string>('orders', { partitions: 3, group: 'audit' })
      audit(): void {}
    }
    await expect(startServer([DisagreeingController])).rejects.toThrow(/disagree on partitions \(2 vs 3\)/);
  });
});
