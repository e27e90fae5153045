import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Test } from '@nestjs/testing';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { REDIS_STREAMS_CONNECTION } from '../../src/tokens.js';
import { DeadLetterService, REDIS_STREAMS_DEAD_LETTER_OPTIONS } from '../../src/recovery/dead-letter.service.js';
import { deadLetterKey, hashSlotOf } from '../../src/redis/keys.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const STREAM = 'orders';
const DEAD = '{orders}:dead';
const GROUP = 'workers';
const CLI = 'build/src/cli/main.js';

describe('DeadLetterService (real redis-server)', () => {
  const redis = useRedisServer();
  let service: DeadLetterService;

  beforeAll(() => {
    service = new DeadLetterService(redis.client);
  });
  beforeEach(async () => {
    await redis.client.flushall();
    await redis.client.xgroup('CREATE', STREAM, GROUP, '0', 'MKSTREAM');
  });

  /** Publishes entries, delivers them to `c1` and dead-letters them; returns source and dead-letter ids. */
  async function deadLetter(entries: string[][], reason = 'max_deliveries'): Promise<{ sourceIds: string[]; deadIds: string[] }> {
    const sourceIds: string[] = [];
    for (const fields of entries) sourceIds.push((await redis.client.xadd(STREAM, '*', ...fields)) as string);
    await redis.client.xreadgroup('GROUP', GROUP, 'c1', 'COUNT', entries.length, 'STREAMS', STREAM, '>');
    const result = await service.moveToDeadLetter({ stream: STREAM, group: GROUP, ids: sourceIds, reason, error: 'boom' });
    return { sourceIds, deadIds: result.outcomes.map((o) => o.deadLetterId!) };
  }

  it('lists typed dead letters page by page', async () => {
    const { sourceIds, deadIds } = await deadLetter([['data', '1'], ['data', '2'], ['data', '3']]);

    const first = await service.list(STREAM, { count: 2 });
    expect(first.deadLetterKey).toBe(DEAD);
    expect(first.deadLetters.map((d) => d.deadLetterId)).toEqual(deadIds.slice(0, 2));
    expect(first.deadLetters[0]).toMatchObject({
      sourceStream: STREAM, sourceId: sourceIds[0], group: GROUP, consumer: 'c1', deliveryCount: 1,
      reason: 'max_deliveries', error: 'boom', tombstone: false, deadLetteredAt: expect.any(Number),
    });
    expect({ ...first.deadLetters[0]!.fields }).toEqual({ data: '1' });
    expect(first.nextStart).toBe(`(${deadIds[1]}`);

    const second = await service.list(STREAM, { start: first.nextStart!, count: 2 });
    expect(second.deadLetters.map((d) => d.deadLetterId)).toEqual([deadIds[2]]);
    expect(second.nextStart).toBeNull();
    expect(await service.size(STREAM)).toBe(3);
    expect((await service.inspect(STREAM, deadIds[2]!))?.sourceId).toBe(sourceIds[2]);
    expect(await service.inspect(STREAM, '1-1')).toBeNull();
  });

  it('redrives dead letters as new source entries with the original fields and history, then deletes them', async () => {
    const original = ['pattern', 'orders', 'data', '{"id":7}', 'dlq:stream', 'user field'];
    const { sourceIds, deadIds } = await deadLetter([original, ['data', 'stays']]);

    const result = await service.redrive(STREAM, [deadIds[0]!, '9-9']);
    expect(result.redriven).toEqual([{ deadLetterId: deadIds[0], newId: expect.any(String) }]);
    expect(result.skipped).toEqual([{ deadLetterId: '9-9', status: 'not_found' }]);

    const newId = result.redriven[0]!.newId;
    const [[, flat]] = (await redis.client.xrange(STREAM, newId, newId)) as [string, string[]][];
    expect(flat).toEqual([
      ...original,
      'dlq:redriven-from', deadIds[0], 'dlq:previous-id', sourceIds[0], 'dlq:previous-deliveries', '1',
      'dlq:previous-reason', 'max_deliveries', 'dlq:redrives', '1',
    ]);
    // A new entry: the group sees it as new work.
    const reread = (await redis.client.xreadgroup('GROUP', GROUP, 'c2', 'COUNT', 10, 'STREAMS', STREAM, '>')) as [string, [string, string[]][]][];
    expect(reread[0]![1].map(([id]) => id)).toEqual([newId]);
    expect((await service.list(STREAM)).deadLetters.map((d) => d.deadLetterId)).toEqual([deadIds[1]]);

    // Running the same redrive again changes nothing.
    const again = await service.redrive(STREAM, [deadIds[0]!]);
    expect(again).toMatchObject({ redriven: [], skipped: [{ deadLetterId: deadIds[0], status: 'not_found' }] });
    expect(await redis.client.xlen(STREAM)).toBe(3);
  });

  it('a message dead-lettered twice carries one history, with the redrive count raised', async () => {
    const { deadIds } = await deadLetter([['data', 'x']]);
    const [{ newId }] = (await service.redrive(STREAM, 'all')).redriven;
    await redis.client.xreadgroup('GROUP', GROUP, 'c1', 'COUNT', 10, 'STREAMS', STREAM, '>');
    const second = await service.moveToDeadLetter({ stream: STREAM, group: GROUP, ids: [newId!], reason: 'max_deliveries' });
    const { redriven } = await service.redrive(STREAM, 'all');
    const [[, flat]] = (await redis.client.xrange(STREAM, redriven[0]!.newId, redriven[0]!.newId)) as [string, string[]][];
    expect(flat).toEqual([
      'data', 'x', 'dlq:redriven-from', second.outcomes[0]!.deadLetterId, 'dlq:previous-id', newId, 'dlq:previous-deliveries', '1',
      'dlq:previous-reason', 'max_deliveries', 'dlq:redrives', '2',
    ]);
    expect(deadIds).toHaveLength(1);
  });

  it('redrive all leaves tombstones (nothing to redrive) and purge removes them', async () => {
    const { sourceIds } = await deadLetter([['data', 'a'], ['data', 'b']]);
    const gone = (await redis.client.xadd(STREAM, '*', 'data', 'c')) as string;
    await redis.client.xreadgroup('GROUP', GROUP, 'c1', 'COUNT', 1, 'STREAMS', STREAM, '>');
    await redis.client.xdel(STREAM, gone);
    const tomb = await service.moveToDeadLetter({ stream: STREAM, group: GROUP, ids: [gone], reason: 'max_deliveries' });
    const tombId = tomb.outcomes[0]!.deadLetterId!;

    const result = await service.redrive(STREAM, 'all');
    expect(result.redriven).toHaveLength(2);
    expect(result.skipped).toEqual([{ deadLetterId: tombId, status: 'tombstone' }]);
    expect(sourceIds).toHaveLength(2);

    expect(await service.purge(STREAM, [tombId, '8-8'])).toEqual({ stream: STREAM, deadLetterKey: DEAD, purged: 1, notFound: ['8-8'], skipped: [] });
    expect(await redis.client.xlen(DEAD)).toBe(0);
  });

  it('purge all removes every dead letter of the stream', async () => {
    await deadLetter([['data', '1'], ['data', '2'], ['data', '3']]);
    expect((await service.purge(STREAM, 'all')).purged).toBe(3);
    expect(await redis.client.xlen(DEAD)).toBe(0);
  });

  it('uses an overridden dead-letter key (service option or per call)', async () => {
    const custom = new DeadLetterService(redis.client, { deadLetterKey: (stream) => `{${stream}}:graveyard` });
    const id = (await redis.client.xadd(STREAM, '*', 'data', '1')) as string;
    await redis.client.xreadgroup('GROUP', GROUP, 'c1', 'COUNT', 1, 'STREAMS', STREAM, '>');
    const moved = await custom.moveToDeadLetter({ stream: STREAM, group: GROUP, ids: [id], reason: 'decode_error' });
    expect(moved.deadLetterKey).toBe('{orders}:graveyard');
    expect(await redis.client.xlen('{orders}:graveyard')).toBe(1);
    expect((await service.list(STREAM, { deadLetterKey: '{orders}:graveyard' })).deadLetters[0]?.reason).toBe('decode_error');
  });

  it('rejects bad input naming the option, before any command', async () => {
    await expect(service.list(STREAM, { count: 0 })).rejects.toMatchObject({ option: 'count' });
    await expect(service.list(STREAM, { start: 'yesterday' })).rejects.toMatchObject({ option: 'start' });
    await expect(service.list('')).rejects.toMatchObject({ option: 'stream' });
    await expect(service.redrive(STREAM, ['x'])).rejects.toBeInstanceOf(RedisStreamsOptionError);
    await expect(service.redrive(STREAM, 'some' as never)).rejects.toMatchObject({ option: 'ids' });
    await expect(service.purge(STREAM, [], { deadLetterKey: '' })).rejects.toMatchObject({ option: 'deadLetterKey' });
    expect(() => new DeadLetterService(redis.client, { maxLen: -1 })).toThrow(RedisStreamsOptionError);
  });

  it('list, inspect and purge touch only dead letters of the given stream when two streams share a dead-letter key', async () => {
    const shared = new DeadLetterService(redis.client, { deadLetterKey: () => 'shared:dead' });
    const letters: Record<string, string> = {};
    for (const stream of ['orders', '{orders}']) {
      await redis.client.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM').catch(() => undefined);
      const id = (await redis.client.xadd(stream, '*', 'from', stream)) as string;
      await redis.client.xreadgroup('GROUP', GROUP, 'c1', 'STREAMS', stream, '>');
      letters[stream] = (await shared.moveToDeadLetter({ stream, group: GROUP, ids: [id], reason: 'manual' })).outcomes[0]!.deadLetterId!;
    }
    const foreign = (await redis.client.xadd('shared:dead', '*', 'not', 'a dead letter')) as string;
    expect((await shared.list('orders')).deadLetters.map((d) => [d.deadLetterId, d.sourceStream])).toEqual([[letters.orders, 'orders']]);
    expect(await shared.inspect('orders', letters['{orders}']!)).toBeNull();
    expect(await shared.purge('orders', [letters['{orders}']!, foreign, letters.orders!])).toEqual({
      stream: 'orders', deadLetterKey: 'shared:dead', purged: 1, notFound: [],
      skipped: [{ deadLetterId: letters['{orders}'], status: 'other_stream' }, { deadLetterId: foreign, status: 'not_dead_letter' }],
    });
    expect((await redis.client.xrange('shared:dead', '-', '+')).map(([id]) => id)).toEqual([letters['{orders}'], foreign]);
  });

  it('is injectable with the connection token and optional options', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [
        DeadLetterService,
        { provide: REDIS_STREAMS_CONNECTION, useValue: redis.client },
        { provide: REDIS_STREAMS_DEAD_LETTER_OPTIONS, useValue: { deadLetterKey: (s: string) => `{${s}}:dlq` } },
      ],
    }).compile();
    try {
      expect(moduleRef.get(DeadLetterService).deadLetterKeyFor(STREAM)).toBe('{orders}:dlq');
    } finally {
      await moduleRef.close();
    }
  });

  // A CLI run (a node process loading Nest) takes seconds under load, three in a row here.
  describe('CLI dlq (compiled)', { timeout: 180_000 }, () => {
    beforeAll(async () => {
      await ensureCompiled();
      expect(existsSync(CLI)).toBe(true);
    }, 240_000);

    it('lists, redrives and purges with JSON output', async () => {
      const { sourceIds, deadIds } = await deadLetter([['data', '1'], ['data', '2'], ['data', '3']]);

      const listed = await cli(['dlq', 'list', STREAM, '--count', '2']);
      expect(listed.code).toBe(0);
      const page = JSON.parse(listed.stdout);
      expect(page.deadLetterKey).toBe(DEAD);
      expect(page.deadLetters.map((d: { sourceId: string }) => d.sourceId)).toEqual(sourceIds.slice(0, 2));
      expect(page.deadLetters[0].fields).toEqual({ data: '1' });
      expect(page.nextStart).toBe(`(${deadIds[1]}`);

      const redriven = await cli(['dlq', 'redrive', STREAM, deadIds[0]!]);
      expect(redriven.code).toBe(0);
      expect(JSON.parse(redriven.stdout)).toMatchObject({ stream: STREAM, deadLetterKey: DEAD, redriven: [{ deadLetterId: deadIds[0] }], skipped: [] });

      const purged = await cli(['dlq', 'purge', STREAM, '--all']);
      expect(JSON.parse(purged.stdout)).toEqual({ stream: STREAM, deadLetterKey: DEAD, purged: 2, notFound: [], skipped: [] });
      expect(await redis.client.xlen(DEAD)).toBe(0);
    });

    it('fails cleanly on bad input: one line on stderr, a non-zero exit code, nothing on stdout', async () => {
      const usage = {
        count: ['dlq', 'list', STREAM, '--count', 'lots'],
        ids: ['dlq', 'redrive', STREAM, 'not-an-id'],
        none: ['dlq', 'purge', STREAM],
        both: ['dlq', 'purge', STREAM, '1-1', '--all'],
      };
      const runs = Object.fromEntries(await Promise.all(Object.entries(usage).map(async ([name, args]) => [name, await cli(args)] as const)));
      for (const [name, run] of Object.entries(runs)) {
        expect(run.code, name).toBe(2);
        expect(run.stdout, name).toBe('');
        expect(run.stderr, name).toMatch(/^error: [^\n]+\n$/);
      }
      expect(runs.count!.stderr).toContain('--count');
      expect(runs.ids!.stderr).toContain('<ids>');

      // A Redis-side failure (the dead-letter key is not a stream) is one line too, exit code 1.
      await redis.client.set(DEAD, 'not a stream');
      const wrongType = await cli(['dlq', 'redrive', STREAM, '--all']);
      expect(wrongType.code).toBe(1);
      expect(wrongType.stdout).toBe('');
      expect(wrongType.stderr).toMatch(/^error: WRONGTYPE[^\n]*\n$/);
    });
  });

  function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args, '--url', redis.server.url], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  }
});

describe('default dead-letter keys (CLUSTER KEYSLOT of a cluster-enabled redis-server)', () => {
  const cluster = useRedisServer({ args: ['--cluster-enabled', 'yes'] });

  it('the default dead-letter key is in the stream\'s hash slot (CLUSTER KEYSLOT) and differs for every stream', async () => {
    const names = [
      'orders', '{orders}', '{orders}:eu', 'orders}x', '{}orders', 'orders{}', '{}', '}', '{', '}{', 'a{b', '{a{b}', 'x{}{y}',
      '{orders}}', 'orders:{eu}', 'a}b{c}', '{{orders}}', 'ordres}', 'é{ü}}', '{orders}:dead', '{orders}:dead-braced', 'orders:dead',
      ...Array.from({ length: 40 }, (_, i) => `s${i}}${'{'.repeat(i % 3)}`),
    ];
    const keys = new Map<string, string>();
    for (const name of names) {
      const key = deadLetterKey(name);
      const [streamSlot, keySlot] = (await Promise.all([cluster.client.cluster('KEYSLOT', name), cluster.client.cluster('KEYSLOT', key)])) as [number, number];
      expect({ name, key, slot: keySlot }).toEqual({ name, key, slot: streamSlot });
      expect(hashSlotOf(name)).toBe(streamSlot);
      expect(key).not.toBe(name);
      expect(keys.get(key), `"${name}" and "${keys.get(key)}" share "${key}"`).toBeUndefined();
      keys.set(key, name);
    }
    // The usual forms are kept.
    expect(deadLetterKey('orders')).toBe('{orders}:dead');
    expect(deadLetterKey('{orders}:eu')).toBe('{orders}:eu:dead');
    expect(deadLetterKey('{orders}')).not.toBe(deadLetterKey('orders'));
  });
});
