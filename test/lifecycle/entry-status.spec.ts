import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryStatusView } from '../../src/cli/views/entry.view.js';
import { RedisStreamsClient, RedisStreamsOptionError, RedisStreamsRecord, type EntryStatus } from '../../src/index.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { delayedScripts } from '../../src/delayed/scripts/loader.js';
import { progressKey, resultKey } from '../../src/lifecycle/lifecycle-keys.js';
import { encodeRecord } from '../../src/lifecycle/lifecycle-records.js';
import { moveToDeadLetter } from '../../src/recovery/dead-letter-move.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

let release: (() => void) | undefined;
const started: string[] = [];

@Controller()
class SlowController {
  @EventPattern('slow')
  async onSlow(@Payload() item: { n: number }): Promise<void> {
    started.push(String(item.n));
    await new Promise<void>((resolve) => (release = resolve));
  }
}

describe('entry status (real redis-server)', { timeout: 120_000 }, () => {
  const redis = useRedisServer();
  let client: RedisStreamsClient;

  beforeAll(() => {
    client = new RedisStreamsClient({ connection: redis.server.url, partitions: { parted: 4 }, priorities: { laned: ['high', 'normal', 'low'] } });
  });
  afterAll(() => client.close());

  const emit = async (pattern: string, data: unknown, options?: ConstructorParameters<typeof RedisStreamsRecord>[1]): Promise<string> =>
    (await lastValueFrom(client.emit(pattern, options === undefined ? data : new RedisStreamsRecord(data, options)))) as string;
  const readOne = async (stream: string, group: string, consumer: string): Promise<void> => {
    await redis.client.xreadgroup('GROUP', group, consumer, 'COUNT', 1, 'STREAMS', stream, '>');
  };

  it('held: a delayed emit, by its hold id, with its due time', async () => {
    const hold = await emit('held', { n: 1 }, { deliverAt: 4_000_000_000_000 });
    expect(await client.entryStatus('held', hold)).toEqual({
      stream: 'held',
      id: hold,
      promotedTo: null,
      state: 'held',
      key: 'held',
      dueAt: new Date(4_000_000_000_000).toISOString(),
      groups: [],
      deadLettersSearched: true,
      progress: null,
      result: null,
    });
  });

  it('waiting, running, pending (idle past the lease window, or parked for a retry), done: per group', async () => {
    await redis.client.xgroup('CREATE', 'orders', 'billing', '$', 'MKSTREAM');
    await redis.client.xgroup('CREATE', 'orders', 'shipping', '$');
    const id = await emit('orders', { n: 1 });
    const waiting = await client.entryStatus('orders', id);
    expect(waiting.state).toBe('waiting');
    expect(waiting.groups).toEqual([
      { group: 'billing', state: 'waiting', consumer: null, deliveries: null, idleMs: null, deadLetter: null },
      { group: 'shipping', state: 'waiting', consumer: null, deliveries: null, idleMs: null, deadLetter: null },
    ]);

    await readOne('orders', 'billing', 'worker-1');
    const running = await client.entryStatus('orders', id);
    expect(running.state).toBe('waiting'); // shipping has not read it: the least advanced group
    expect(running.groups[0]).toMatchObject({ group: 'billing', state: 'running', consumer: 'worker-1', deliveries: 1 });
    expect(running.groups[1]).toMatchObject({ group: 'shipping', state: 'waiting' });

    // Nobody renewed its lease for a minute: pending (its worker is gone, or busy without leases).
    await redis.client.xclaim('orders', 'billing', 'worker-1', 0, id, 'IDLE', 60_000, 'JUSTID');
    const pending = await client.entryStatus('orders', id, { group: 'billing' });
    expect(pending.state).toBe('pending');
    expect(pending.groups).toHaveLength(1);
    expect(pending.groups[0]).toMatchObject({ group: 'billing', state: 'pending', consumer: 'worker-1', deliveries: 1 });
    expect(pending.groups[0]!.idleMs).toBeGreaterThanOrEqual(60_000);
    // A shorter window of its own: a fresh entry counts as running only within it.
    await redis.client.xclaim('orders', 'billing', 'worker-1', 0, id, 'IDLE', 5_000, 'JUSTID');
    expect((await client.entryStatus('orders', id, { group: 'billing', leaseWindow: 'PT1S' })).state).toBe('pending');
    expect((await client.entryStatus('orders', id, { group: 'billing' })).state).toBe('running');
    // Parked on the retry consumer after a failure: pending however fresh.
    await redis.client.xclaim('orders', 'billing', 'retry', 0, id, 'JUSTID');
    expect((await client.entryStatus('orders', id, { group: 'billing' })).groups[0]).toMatchObject({ state: 'pending', consumer: 'retry' });

    await redis.client.xack('orders', 'billing', id);
    await readOne('orders', 'shipping', 'worker-2');
    await redis.client.xack('orders', 'shipping', id);
    const done = await client.entryStatus('orders', id);
    expect(done).toEqual({
      stream: 'orders',
      id,
      promotedTo: null,
      state: 'done',
      key: 'orders',
      dueAt: null,
      groups: [
        { group: 'billing', state: 'done', consumer: null, deliveries: null, idleMs: null, deadLetter: null },
        { group: 'shipping', state: 'done', consumer: null, deliveries: null, idleMs: null, deadLetter: null },
      ],
      deadLettersSearched: true,
      progress: null,
      result: null,
    });
  });

  it('dead-lettered: with its dead letter, whether the entry stays in the stream or was deleted', async () => {
    await redis.client.xgroup('CREATE', 'failing', 'g', '$', 'MKSTREAM');
    const kept = await emit('failing', { n: 1 });
    const deleted = await emit('failing', { n: 2 });
    await readOne('failing', 'g', 'worker-1');
    await readOne('failing', 'g', 'worker-1');
    await moveToDeadLetter(redis.client, { stream: 'failing', group: 'g', ids: [kept, deleted], reason: 'max_deliveries', error: 'boom' });
    await redis.client.xdel('failing', deleted);
    const [[letterOfKept], [letterOfDeleted]] = [
      (await redis.client.xrange('{failing}:dead', '-', '+')).filter(([, fields]) => fields[3] === kept),
      (await redis.client.xrange('{failing}:dead', '-', '+')).filter(([, fields]) => fields[3] === deleted),
    ];
    for (const [id, letter] of [[kept, letterOfKept], [deleted, letterOfDeleted]] as const) {
      const status = await client.entryStatus('failing', id);
      const at = new Date(Number((letter![1] as string[])[15])).toISOString();
      expect(status).toEqual({
        stream: 'failing',
        id,
        promotedTo: null,
        state: 'dead-lettered',
        key: 'failing',
        dueAt: null,
        groups: [
          {
            group: 'g',
            state: 'dead-lettered',
            consumer: null,
            deliveries: 1,
            idleMs: null,
            deadLetter: { key: '{failing}:dead', id: letter![0], reason: 'max_deliveries', error: 'boom', deliveries: 1, at },
          },
        ],
        deadLettersSearched: true,
        progress: null,
        result: null,
      });
    }
  });

  it('gone: trimmed after it was done, or never there; the dead-letter search says when it stopped at its bound', async () => {
    await redis.client.xgroup('CREATE', 'trimmed', 'g', '$', 'MKSTREAM');
    const id = await emit('trimmed', { n: 1 });
    await readOne('trimmed', 'g', 'worker-1');
    await redis.client.xack('trimmed', 'g', id);
    await emit('trimmed', { n: 2 });
    await redis.client.xtrim('trimmed', 'MAXLEN', 1);
    expect(await client.entryStatus('trimmed', id)).toEqual({ stream: 'trimmed', id, promotedTo: null, state: 'gone', key: null, dueAt: null, groups: [], deadLettersSearched: true, progress: null, result: null });
    expect((await client.entryStatus('trimmed', '1-0')).state).toBe('gone');
    expect((await client.entryStatus('trimmed', 'no-such-hold')).state).toBe('gone');
    for (let n = 0; n < 3; n++) await redis.client.xadd('{trimmed}:dead', '*', 'other', String(n));
    expect((await client.entryStatus('trimmed', id, { deadLetterScan: 2 })).deadLettersSearched).toBe(false);
    // Three read of three: the end is only seen by a read that comes back short.
    expect((await client.entryStatus('trimmed', id, { deadLetterScan: 3 })).deadLettersSearched).toBe(false);
    expect((await client.entryStatus('trimmed', id, { deadLetterScan: 4 })).deadLettersSearched).toBe(true);
  });

  it('a custom dead-letter key, as the servers name it', async () => {
    await redis.client.xgroup('CREATE', 'custom', 'g', '$', 'MKSTREAM');
    const id = await emit('custom', { n: 1 });
    await readOne('custom', 'g', 'w');
    await moveToDeadLetter(redis.client, { stream: 'custom', group: 'g', ids: [id], reason: 'manual', deadLetterKey: '{custom}:dlq' });
    expect((await client.entryStatus('custom', id)).state).toBe('done');
    const status = await client.entryStatus('custom', id, { deadLetterKey: '{%s}:dlq' });
    expect([status.state, status.groups[0]!.deadLetter?.key]).toEqual(['dead-lettered', '{custom}:dlq']);
  });

  it('a promoted hold: its hold id answers for the entry it became (status, progress, result, cancel), recurring holds stay held', async () => {
    await redis.client.xgroup('CREATE', 'promoted', 'g', '$', 'MKSTREAM');
    const hold = await emit('promoted', { n: 1 }, { delay: 300 });
    expect((await client.entryStatus('promoted', hold)).state).toBe('held');
    let entryId = '';
    await waitFor(async () => {
      const promotion = await promoteDue(redis.client, 'promoted');
      entryId = promotion.promoted[0]?.id ?? '';
      return entryId !== '';
    }, 'the hold promoted');
    expect(await client.entryStatus('promoted', hold)).toEqual({ ...(await client.entryStatus('promoted', entryId)), id: hold, promotedTo: entryId });
    expect(await client.entryStatus('promoted', hold)).toMatchObject({ state: 'waiting', key: 'promoted', promotedTo: entryId });

    await readOne('promoted', 'g', 'worker-1');
    expect(await client.entryStatus('promoted', hold)).toMatchObject({ state: 'running', groups: [{ group: 'g', consumer: 'worker-1', deliveries: 1 }] });
    const record = { state: 'done', value: { ok: true }, delivery: 1, at: new Date().toISOString() };
    await redis.client.set(resultKey('promoted', entryId), encodeRecord(record));
    await redis.client.set(progressKey('promoted', entryId), encodeRecord({ value: 7, delivery: 1, at: record.at }));
    expect(await client.result('promoted', hold)).toEqual(record);
    expect(await client.progress('promoted', hold)).toMatchObject({ value: 7 });

    const cancelled = await client.cancel('promoted', hold, 'withdrawn');
    expect(cancelled).toMatchObject({ id: hold, promotedTo: entryId, cancelled: true, previous: 'pending', key: 'promoted' });
    expect(await redis.client.xpending('promoted', 'g')).toEqual([0, null, null, null]);
    expect(await client.entryStatus('promoted', hold)).toMatchObject({ state: 'dead-lettered', id: hold, promotedTo: entryId, groups: [{ group: 'g', deadLetter: { reason: 'cancelled', error: 'withdrawn' } }] });

    // A recurring hold keeps its hold id, scheduled again: held, never followed.
    const recurring = await emit('promoted', { n: 2 }, { repeat: { every: 300, key: 'every-300' } });
    await waitFor(async () => (await promoteDue(redis.client, 'promoted')).added > 0, 'the recurring hold promoted once');
    expect(await client.entryStatus('promoted', recurring)).toMatchObject({ state: 'held', promotedTo: null });
  });

  it('promoted holds are remembered for their keep time only: older ones are dropped by a later promotion', async () => {
    const { schedule, bodies, promoted, promotedAt } = delayedKeys('forgotten');
    const first = await emit('forgotten', { n: 1 }, { deliverAt: 1_000 });
    await delayedScripts(redis.client).nrsDelayedPromote('forgotten', schedule, bodies, promoted, promotedAt, 100, 0, '1', 50);
    expect(await redis.client.hkeys(promoted)).toEqual([first]);
    await new Promise((resolve) => setTimeout(resolve, 60));
    const second = await emit('forgotten', { n: 2 }, { deliverAt: 1_000 });
    await delayedScripts(redis.client).nrsDelayedPromote('forgotten', schedule, bodies, promoted, promotedAt, 100, 0, '1', 50);
    expect([await redis.client.hkeys(promoted), await redis.client.zrange(promotedAt, 0, -1)]).toEqual([[second], [second]]);
    expect((await client.entryStatus('forgotten', first)).state).toBe('gone');
  });

  it('partitions and priority lanes resolve by the pattern', async () => {
    const inPartition = await emit('parted', { n: 1 }, { partitionKey: 'customer-7' });
    const parted = await client.entryStatus('parted', inPartition);
    expect([parted.stream, parted.key, parted.state]).toEqual(['parted', `parted:p${(await partitionOf('customer-7'))}`, 'waiting']);
    const urgent = await emit('laned', { n: 1 }, { priority: 'high' });
    const laned = await client.entryStatus('laned', urgent);
    expect([laned.stream, laned.key, laned.state]).toEqual(['laned', 'laned:high', 'waiting']);
    const held = await emit('laned', { n: 2 }, { priority: 'low', delay: 'PT1H' });
    expect(await client.entryStatus('laned', held)).toMatchObject({ state: 'held', key: 'laned:low' });
  });

  it('running under a real worker, done once its handler returns', async () => {
    let app: RunningServer | undefined;
    try {
      app = await startServer({ connection: redis.server.url, group: 'workers' }, [SlowController]);
      const id = await emit('slow', { n: 1 });
      await waitFor(() => started.length === 1, 'the handler to start');
      const running = await client.entryStatus('slow', id);
      expect(running.state).toBe('running');
      expect(running.groups[0]).toMatchObject({ state: 'running', deliveries: 1 });
      release?.();
      await waitFor(async () => (await client.entryStatus('slow', id)).state === 'done', 'the entry to be done');
    } finally {
      release?.();
      await app?.app.close();
    }
  });

  it('bad input: a clear error naming the option', async () => {
    await expect(client.entryStatus('orders', '')).rejects.toThrow(RedisStreamsOptionError);
    await expect(client.entryStatus('orders', '')).rejects.toThrow(/entryId/);
    await expect(client.entryStatus('orders', '1-0', { leaseWindow: 'soon' })).rejects.toThrow(/leaseWindow/);
    await expect(client.entryStatus('orders', '1-0', { deadLetterScan: 0 })).rejects.toThrow(/deadLetterScan/);
    await expect(client.entryStatus('orders', '1-0', { deadLetterKey: 'no-placeholder' as never })).rejects.toThrow(/deadLetterKey/);
  });

  it('CLI entry: exact JSON (partitions found by their metadata, lanes given), and the human view', async () => {
    await ensureCompiled();
    await redis.client.xgroup('CREATE', 'cli', 'g', '$', 'MKSTREAM');
    const id = await emit('cli', { n: 1 });
    await readOne('cli', 'g', 'worker-1');
    await redis.client.xclaim('cli', 'g', 'worker-1', 0, id, 'IDLE', 90_000, 'JUSTID');
    const cli = (...args: string[]) => runCli([...args, '--url', redis.server.url], {}, { timeoutMs: 30_000 });
    const run = await cli('entry', 'cli', id);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const status = JSON.parse(run.stdout) as EntryStatus;
    expect(status.groups[0]!.idleMs).toBeGreaterThanOrEqual(90_000);
    expect({ ...status, groups: [{ ...status.groups[0], idleMs: 0 }] }).toEqual({
      stream: 'cli',
      id,
      promotedTo: null,
      state: 'pending',
      key: 'cli',
      dueAt: null,
      groups: [{ group: 'g', state: 'pending', consumer: 'worker-1', deliveries: 1, idleMs: 0, deadLetter: null }],
      deadLettersSearched: true,
      progress: null,
      result: null,
    });
    const inPartition = await emit('parted', { n: 2 }, { partitionKey: 'customer-9' });
    const parted = JSON.parse((await cli('entry', 'parted', inPartition)).stdout) as EntryStatus;
    expect([parted.key, parted.state]).toEqual([`parted:p${await partitionOf('customer-9')}`, 'waiting']);
    const low = await emit('laned', { n: 3 }, { priority: 'low' });
    expect((JSON.parse((await cli('entry', 'laned', low, '--lanes', 'high,normal,low')).stdout) as EntryStatus).key).toBe('laned:low');
    const bad = await cli('entry', 'cli', id, '--lease-window', 'soon');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--lease-window');

    expect(entryStatusView({ ...status, key: 'cli:p1', groups: [{ ...status.groups[0]!, idleMs: 90_000 }] })).toBe(
      `entry ${id} of cli: pending (in cli:p1)\n\n` +
        'GROUP  STATE    CONSUMER  DELIVERIES   IDLE  DEAD LETTER\n' +
        'g      pending  worker-1           1  1m30s  -\n',
    );
  });
});

async function partitionOf(key: string): Promise<number> {
  const { partitionIndexOf } = await import('../../src/partitions/partition-keys.js');
  return partitionIndexOf(key, 4);
}
