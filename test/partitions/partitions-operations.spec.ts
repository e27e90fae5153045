import { lastValueFrom } from 'rxjs';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DeadLetterService,
  RedisStreamsClaimError,
  RedisStreamsClient,
  RedisStreamsPartitionedStreamError,
  partitionStreamKeys,
} from '../../src/index.js';
import { StreamClaimer } from '../../src/claim/stream-claimer.js';
import { StreamInspector } from '../../src/claim/stream-inspector.js';
import type { PartitionedPendingEntries, PartitionedPendingSummary } from '../../src/cli/partitioned-pending.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * Operations on a partitioned stream by its name (`orders`, 3 partitions): whole-stream ones
 * aggregate the partitions, one-key ones fail naming the partition keys. The state is built with
 * the transport's own producer and dead-letter move on a real redis-server.
 */
const PARTITIONS = 3;
const KEYS = partitionStreamKeys('orders', PARTITIONS);

describe('operations on a partitioned stream (real redis-server)', () => {
  const redis = useRedisServer();
  let producer: RedisStreamsClient;
  /** Source ids per partition, and the dead-letter ids of the first two entries of each partition. */
  let deadLetterIds: string[];

  beforeAll(ensureCompiled, 300_000);

  beforeEach(async () => {
    await redis.client.flushall();
    producer = new RedisStreamsClient({ connection: redis.server.url, partitions: { orders: PARTITIONS } });
    for (const key of KEYS) await redis.client.xgroup('CREATE', key, 'billing', '0', 'MKSTREAM');
    // 12 entries, round robin: 4 per partition; all delivered to c1, so all pending.
    for (let n = 0; n < 12; n++) await lastValueFrom(producer.emit('orders', { n }));
    for (const key of KEYS) await redis.client.xreadgroup('GROUP', 'billing', 'c1', 'STREAMS', key, '>');
    // The first two pending entries of each partition become dead letters.
    const service = new DeadLetterService(redis.client);
    deadLetterIds = [];
    for (const key of KEYS) {
      const ids = ((await redis.client.xrange(key, '-', '+', 'COUNT', 2)) as [string, string[]][]).map(([id]) => id);
      await service.moveToDeadLetter({ stream: key, group: 'billing', ids, reason: 'max_deliveries', error: 'boom' });
      deadLetterIds.push(...((await redis.client.xrange(`{${key}}:dead`, '-', '+')) as [string, string[]][]).map(([id]) => id));
    }
  });

  afterEach(async () => {
    await producer.close();
  });

  it('DeadLetterService: size and list aggregate the partitions (pages in id order), by-id calls name the partitions', async () => {
    const service = new DeadLetterService(redis.client);
    expect(await service.size('orders')).toBe(6);
    expect(await service.size('orders:p1')).toBe(2);
    const seen: string[] = [];
    let start: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await service.list('orders', { count: 2, start });
      expect(page.deadLetterKey).toBe('{orders:p*}:dead');
      expect(page.deadLetterKeys).toEqual(KEYS.map((key) => `{${key}}:dead`));
      seen.push(...page.deadLetters.map((letter) => letter.deadLetterId));
      if (page.nextStart === null) break;
      start = page.nextStart;
    }
    expect(seen).toEqual([...deadLetterIds].sort(compareIds));
    const all = await service.list('orders');
    expect(all.deadLetters.map((letter) => letter.sourceStream).sort()).toEqual([...KEYS, ...KEYS].sort());
    expect(all.nextStart).toBeNull();

    const failure = await service.inspect('orders', deadLetterIds[0]!).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RedisStreamsPartitionedStreamError);
    expect(failure).toMatchObject({ stream: 'orders', partitionKeys: KEYS, operation: 'inspect' });
    expect((failure as Error).message).toMatch(/orders:p0, orders:p1, orders:p2/);
    await expect(service.redrive('orders', [deadLetterIds[0]!])).rejects.toBeInstanceOf(RedisStreamsPartitionedStreamError);
    await expect(service.purge('orders', [deadLetterIds[0]!])).rejects.toBeInstanceOf(RedisStreamsPartitionedStreamError);
    expect(await service.inspect('orders:p0', deadLetterIds[0]!)).toMatchObject({ sourceStream: 'orders:p0' });
    // An explicit deadLetterKey names one dead-letter stream: taken as it is.
    expect(await service.size('orders', { deadLetterKey: '{orders:p2}:dead' })).toBe(2);
  });

  it("DeadLetterService: redrive and purge of 'all' cover every partition", async () => {
    const service = new DeadLetterService(redis.client);
    await service.purge('orders:p2', [deadLetterIds[4]!]);
    const redriven = await service.redrive('orders', 'all');
    expect(redriven.partitions?.map((one) => [one.stream, one.redriven.length])).toEqual([
      ['orders:p0', 2],
      ['orders:p1', 2],
      ['orders:p2', 1],
    ]);
    expect(redriven.redriven).toHaveLength(5);
    expect(await Promise.all(KEYS.map((key) => redis.client.xlen(key)))).toEqual([6, 6, 5]);
    expect(await service.size('orders')).toBe(0);
    // Dead-lettered again, then purged over all partitions.
    for (const key of KEYS) {
      const [[, [[id]]]] = (await redis.client.xreadgroup('GROUP', 'billing', 'c1', 'COUNT', 1, 'STREAMS', key, '>')) as unknown as [[string, [[string]]]];
      await service.moveToDeadLetter({ stream: key, group: 'billing', ids: [id], reason: 'max_deliveries' });
    }
    const purged = await service.purge('orders', 'all');
    expect(purged).toMatchObject({ stream: 'orders', deadLetterKey: '{orders:p*}:dead', purged: 3 });
    expect(purged.partitions).toHaveLength(3);
  });

  it('claim and ack of the stream name fail with RedisStreamsClaimError naming its partitions; one partition works', async () => {
    const claimer = new StreamClaimer(redis.client);
    const claimed = await claimer.claim({ key: 'orders', group: 'billing', consumer: 'c2', minIdleTime: 1 }).catch((error: unknown) => error);
    expect(claimed).toBeInstanceOf(RedisStreamsClaimError);
    expect(claimed).toMatchObject({ reason: 'missing-stream', partitionKeys: KEYS });
    expect((claimed as Error).message).toMatch(/partitioned into 3 streams \(orders:p0, orders:p1, orders:p2\)/);
    await expect(claimer.ack('orders', 'billing', ['1-0'])).rejects.toMatchObject({ partitionKeys: KEYS });
    expect((await claimer.claim({ key: 'orders:p0', group: 'billing', consumer: 'c2', minIdleTime: 1 })).ids).toHaveLength(2);
    // A stream that is neither is still just missing (and XACK on it still counts 0).
    await expect(claimer.claim({ key: 'nothing', group: 'billing', consumer: 'c2', minIdleTime: 1 })).rejects.toMatchObject({ partitionKeys: undefined });
    expect(await claimer.ack('nothing', 'billing', ['1-0'])).toBe(0);
    await expect(new StreamInspector(redis.client).pendingSummary('orders', 'billing')).rejects.toMatchObject({ partitionKeys: KEYS });
  });

  it('CLI: pending and pending --entries aggregate, dlq list / redrive --all / purge --all aggregate, one-key commands name the partitions', async () => {
    const url = ['--url', redis.server.url];
    const json = async (args: string[]) => {
      const run = await runCli([...args, ...url]);
      expect(run.stderr).toBe('');
      return JSON.parse(run.stdout) as unknown;
    };
    const summary = (await json(['pending', 'orders', 'billing'])) as PartitionedPendingSummary;
    expect(summary.partitions.map((partition) => [partition.key, partition.count])).toEqual(KEYS.map((key) => [key, 2]));
    expect(summary.total).toMatchObject({ count: 6, consumers: [{ name: 'c1', pending: 6 }] });
    const entries = (await json(['pending', 'orders', 'billing', '--entries', '--count', '4'])) as PartitionedPendingEntries;
    expect(entries.partitionKeys).toEqual(KEYS);
    // Cut after 4, but never between equal ids (partitions written in the same ms share ids).
    const ids = entries.entries.map((entry) => entry.id);
    expect(ids.length).toBeGreaterThanOrEqual(4);
    expect(ids.slice(4).every((id) => id === ids[3])).toBe(true);
    expect(entries.entries.map((entry) => entry.id)).toEqual(entries.entries.map((entry) => entry.id).sort(compareIds));
    expect(new Set(entries.entries.map((entry) => entry.key)).size).toBeGreaterThan(1);

    // top: each partition's row, then the total (pending and dead letters summed).
    const top = (await json(['top', 'orders', '--iterations', '1'])) as { rows: { stream: string; group: string; length: number; pending: number; deadLetters: number }[] };
    expect(top.rows.map((row) => [row.stream, row.group, row.length, row.pending, row.deadLetters])).toEqual([
      ...KEYS.map((key) => [key, 'billing', 4, 2, 2]),
      ['orders (total)', 'billing', 12, 6, 6],
    ]);

    const page = (await json(['dlq', 'list', 'orders'])) as { deadLetterKeys: string[]; deadLetters: { deadLetterId: string }[] };
    expect(page.deadLetters.map((letter) => letter.deadLetterId)).toEqual([...deadLetterIds].sort(compareIds));
    // A --dead-letter-key template applies to each partition (the app's deadLetterKey setting).
    const templated = (await json(['dlq', 'list', 'orders', '--dead-letter-key', '{%s}:dlq'])) as { deadLetterKeys: string[] };
    expect(templated.deadLetterKeys).toEqual(KEYS.map((key) => `{${key}}:dlq`));
    const redriven = (await json(['dlq', 'redrive', 'orders', '--all'])) as { redriven: unknown[] };
    expect(redriven.redriven).toHaveLength(6);
    expect((await json(['dlq', 'purge', 'orders', '--all'])) as object).toMatchObject({ purged: 0 });

    for (const args of [
      ['claim', 'orders', 'billing', 'c2', '--min-idle-time', '1'],
      ['ack', 'orders', 'billing', '1-0'],
      ['dlq', 'inspect', 'orders', '1-0'],
      ['dlq', 'purge', 'orders', '1-0'],
    ]) {
      const run = await runCli([...args, ...url]);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr, args.join(' ')).toMatch(/orders:p0, orders:p1, orders:p2/);
    }
  }, 60_000);
});

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}
