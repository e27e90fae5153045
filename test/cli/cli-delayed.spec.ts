import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import type { PartitionedInfoOutput } from '../../src/cli/partition-totals.js';
import { partitionedInfoView } from '../../src/cli/views/partitioned-info.view.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { partitionIndexOf, partitionsMetadataKey, partitionStreamKeys } from '../../src/partitions/partition-keys.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { runCli, type CliRun } from '../helpers/run-cli.js';

type Entry = [id: string, fields: string[]];

describe('CLI delayed count | list | promote | remove', { timeout: 180_000 }, () => {
  let server: RedisServerProcess;
  let client: RedisStreamsClient;
  /** The spec's own reads and writes: one connection, closed with the server (a client per call would outlive it, reconnecting). */
  let admin: Redis;
  const cli = (...args: string[]): Promise<CliRun> => runCli([...args, '--url', server.url], {}, { timeoutMs: 60_000 });
  const json = (run: CliRun): unknown => {
    expect([run.code, run.stderr]).toEqual([0, '']);
    return JSON.parse(run.stdout);
  };
  const hold = async (stream: string, data: unknown, options: ConstructorParameters<typeof RedisStreamsRecord>[1]) =>
    (await lastValueFrom(client.emit(stream, new RedisStreamsRecord(data, options)))) as string;

  beforeAll(async () => {
    await ensureCompiled();
    server = await RedisServerProcess.start();
    client = new RedisStreamsClient({ connection: server.url });
    admin = server.client();
  }, 240_000);
  afterAll(async () => {
    admin.disconnect();
    await client.close();
    await server.stop();
  });

  it('count: held, due and not promoted (on Redis clock), next due time', async () => {
    await hold('counted', { n: 1 }, { deliverAt: 1_000 });
    await hold('counted', { n: 2 }, { deliverAt: 2_000 });
    await hold('counted', { n: 3 }, { delay: 'PT1H' });
    expect(json(await cli('delayed', 'count', 'counted'))).toEqual({ stream: 'counted', held: 3, due: 2, nextDueAt: new Date(1_000).toISOString() });
    expect(json(await cli('delayed', 'count', 'nothing-held'))).toEqual({ stream: 'nothing-held', held: 0, due: 0, nextDueAt: null });
  });

  it('list: pages soonest due first, with the fields and the trimming the promotion will apply', async () => {
    const holds = [
      await hold('listed', { n: 1 }, { deliverAt: 1_000, trim: { maxLen: 10 } }),
      await hold('listed', { n: 2 }, { deliverAt: 2_000, headers: { tenant: 'acme' } }),
      await hold('listed', { n: 3 }, { deliverAt: 3_000, trim: false }),
    ];
    const first = json(await cli('delayed', 'list', 'listed', '--count', '2')) as { held: number; entries: unknown[]; nextOffset: number | null };
    expect(first).toEqual({
      stream: 'listed',
      held: 3,
      entries: [
        { hold: holds[0], dueAt: new Date(1_000).toISOString(), due: true, fields: [['pattern', 'listed'], ['data', '{"n":1}']], noMkStream: false, trim: 'MAXLEN ~ 10', everyMs: null, cron: null },
        {
          hold: holds[1],
          dueAt: new Date(2_000).toISOString(),
          due: true,
          fields: [['pattern', 'listed'], ['data', '{"n":2}'], ['headers', '{"tenant":"acme"}']],
          noMkStream: false,
          trim: 'MAXLEN ~ 100000',
          everyMs: null,
          cron: null,
        },
      ],
      nextOffset: 2,
    });
    const second = json(await cli('delayed', 'list', 'listed', '--offset', '2')) as { entries: { hold: string; trim: string }[]; nextOffset: number | null };
    expect([second.entries.map((entry) => [entry.hold, entry.trim]), second.nextOffset]).toEqual([[[holds[2], 'none']], null]);
  });

  it('promote: named holds now whatever their due time, else the due ones; each once', async () => {
    const later = await hold('promoted', { n: 'later' }, { delay: 'PT1H' });
    const stays = await hold('promoted', { n: 'stays' }, { delay: 'PT1H' });
    const due = await hold('promoted', { n: 'due' }, { deliverAt: 0 });
    const named = json(await cli('delayed', 'promote', 'promoted', later)) as { promoted: { hold: string; id: string }[] };
    // The named one, and the one that was due anyway.
    expect(named.promoted.map((row) => row.hold).sort()).toEqual([later, due].sort());
    const entries = (await admin.xrange('promoted', '-', '+')) as Entry[];
    expect(entries.map(([id]) => id).sort()).toEqual(named.promoted.map((row) => row.id).sort());
    expect(json(await cli('delayed', 'promote', 'promoted'))).toEqual({ stream: 'promoted', promoted: [], skipped: [] });
    // A hold already promoted is not scheduled again by naming it.
    expect(json(await cli('delayed', 'promote', 'promoted', later))).toEqual({ stream: 'promoted', promoted: [], skipped: [] });
    expect(json(await cli('delayed', 'count', 'promoted'))).toMatchObject({ held: 1 });
    expect(await admin.zscore(delayedKeys('promoted').schedule, stays)).not.toBeNull();
  });

  it('remove: the hold and its body are gone, and it is never promoted', async () => {
    const removed = await hold('removed', { n: 1 }, { deliverAt: 0 });
    expect(json(await cli('delayed', 'remove', 'removed', removed, 'no-such-hold'))).toEqual({ stream: 'removed', requested: 2, removed: 1 });
    const keys = delayedKeys('removed');
    expect(await admin.exists(keys.schedule, keys.bodies)).toBe(0);
    expect(json(await cli('delayed', 'promote', 'removed'))).toEqual({ stream: 'removed', promoted: [], skipped: [] });
    expect(await admin.exists('removed')).toBe(0);
  });

  it('info shows the held entries of a stream that holds some, and nothing of the kind otherwise', async () => {
    await admin.xadd('shown', '*', 'n', '1');
    await hold('shown', { n: 2 }, { deliverAt: 5_000 });
    await hold('shown', { n: 3 }, { delay: 'PT1H' });
    expect(json(await cli('info', 'shown'))).toMatchObject({ key: 'shown', stream: { length: 1 }, delayed: { held: 2, due: 1, nextDueAt: new Date(5_000).toISOString() } });
    await admin.xadd('plain', '*', 'n', '1');
    expect(Object.keys(json(await cli('info', 'plain')) as object)).toEqual(['key', 'stream', 'groups']);
  });

  it('info of a partitioned stream: each partition its held entries, the total their sum (next due: the soonest)', async () => {
    const redis = server.client();
    onTestFinished(() => redis.disconnect());
    await redis.set(partitionsMetadataKey('parted'), '3');
    for (const key of partitionStreamKeys('parted', 3)) await redis.xadd(key, '*', 'n', '0');
    const producer = new RedisStreamsClient({ connection: server.url, partitions: { parted: 3 } });
    const keyOf = (partition: number) => Array.from({ length: 20 }, (_, i) => `k${i}`).find((key) => partitionIndexOf(key, 3) === partition)!;
    const held = (options: ConstructorParameters<typeof RedisStreamsRecord>[1]) => lastValueFrom(producer.emit('parted', new RedisStreamsRecord({ n: 1 }, options)));
    try {
      await held({ deliverAt: 3_000, partitionKey: keyOf(0) });
      await held({ delay: 'PT1H', partitionKey: keyOf(0) });
      await held({ deliverAt: 9_000, partitionKey: keyOf(1) });
      await held({ delay: 'PT2H', partitionKey: keyOf(1) });
    } finally {
      await producer.close();
    }
    const info = json(await cli('info', 'parted')) as PartitionedInfoOutput;
    expect(info.partitions.map((partition) => [partition.key, partition.delayed])).toEqual([
      ['parted:p0', { held: 2, due: 1, nextDueAt: new Date(3_000).toISOString() }],
      ['parted:p1', { held: 2, due: 1, nextDueAt: new Date(9_000).toISOString() }],
      ['parted:p2', undefined],
    ]);
    expect(info.total).toMatchObject({ length: 3, delayed: { held: 4, due: 2, nextDueAt: new Date(3_000).toISOString() } });
    const lines = partitionedInfoView(info).split('\n');
    expect(lines[1]).toBe(`delayed: 4 held, 2 due and not promoted yet, next due ${new Date(3_000).toISOString()} (all partitions)`);
    const header = lines.find((line) => line.startsWith('PARTITION'))!;
    expect(header.split(/\s{2,}/)).toEqual(['PARTITION', 'ENTRIES', 'FIRST', 'LAST', 'DELAYED', 'DUE', 'NEXT DUE']);
    const cells = (name: string) => lines.find((line) => line.startsWith(`${name} `))!.slice(header.indexOf('DELAYED')).trim().split(/\s+/);
    expect(['parted:p0', 'parted:p1', 'parted:p2', 'total'].map(cells)).toEqual([
      ['2', '1', new Date(3_000).toISOString()],
      ['2', '1', new Date(9_000).toISOString()],
      ['0', '0', '-'],
      ['4', '2', new Date(3_000).toISOString()],
    ]);
    // Nothing held in any partition: no delayed line, no delayed columns.
    await redis.set(partitionsMetadataKey('bare'), '2');
    for (const key of partitionStreamKeys('bare', 2)) await redis.xadd(key, '*', 'n', '0');
    const bare = json(await cli('info', 'bare')) as PartitionedInfoOutput;
    expect(bare.total.delayed).toBeUndefined();
    expect(partitionedInfoView(bare)).not.toMatch(/delayed|DELAYED/);
  });

  it('bad --count: exit 2, one line naming the flag', async () => {
    const run = await cli('delayed', 'list', 'listed', '--count', '0');
    expect([run.code, run.stdout]).toEqual([2, '']);
    expect(run.stderr.trimEnd()).toMatch(/^error: invalid --count: .*between 1 and 10000/);
  });
});
