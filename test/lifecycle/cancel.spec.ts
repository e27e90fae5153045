import { Logger } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsAbortError, RedisStreamsClient, RedisStreamsRecord, RedisStreamsServer } from '../../src/index.js';
import type { RedisStreamsContext } from '../../src/server/context.js';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { pendingRows } from '../helpers/stream-state.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { runCli } from '../helpers/run-cli.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

describe('cancel at every state (real redis-server)', { timeout: 120_000 }, () => {
  const redis = useRedisServer();
  let client: RedisStreamsClient;
  beforeAll(() => {
    client = new RedisStreamsClient({ connection: redis.server.url });
  });
  afterAll(() => client.close());

  const emit = async (pattern: string, data: unknown, options?: ConstructorParameters<typeof RedisStreamsRecord>[1]): Promise<string> =>
    (await lastValueFrom(client.emit(pattern, options === undefined ? data : new RedisStreamsRecord(data, options)))) as string;
  const deadLetters = async (stream: string) =>
    ((await redis.client.xrange(`{${stream}}:dead`, '-', '+')) as [string, string[]][]).map(([id, flat]) => parseDeadLetter(id, flat)!);

  it('held: the hold is removed (never promoted), its fields kept in the dead letter', async () => {
    const hold = await emit('c-held', { n: 1 }, { delay: 'PT1H' });
    const outcome = await client.cancel('c-held', hold, 'not needed any more');
    expect(outcome).toEqual({ stream: 'c-held', id: hold, promotedTo: null, cancelled: true, previous: 'held', key: 'c-held', deadLetter: { key: '{c-held}:dead', id: expect.any(String) } });
    expect(await redis.client.zcard('{c-held}:delayed')).toBe(0);
    expect(await redis.client.hlen('{c-held}:delayed-bodies')).toBe(0);
    const [letter] = await deadLetters('c-held');
    expect(letter).toMatchObject({ sourceId: hold, reason: 'cancelled', error: 'not needed any more', fields: { pattern: 'c-held', data: '{"n":1}' } });
    expect((await client.entryStatus('c-held', hold)).state).toBe('gone');
  });

  it('waiting: dead-lettered and deleted, so no group reads it; pending with nobody running it: acked in its group', async () => {
    await redis.client.xgroup('CREATE', 'c-queue', 'g', '$', 'MKSTREAM');
    const waiting = await emit('c-queue', { n: 1 });
    const stalled = await emit('c-queue', { n: 2 });
    await redis.client.xreadgroup('GROUP', 'g', 'gone-worker', 'COUNT', 1, 'STREAMS', 'c-queue', '>');
    // The first was read by a worker that died: pending, nobody running it.
    expect((await client.cancel('c-queue', waiting)).previous).toBe('pending');
    expect((await client.cancel('c-queue', stalled)).previous).toBe('waiting');
    expect(await redis.client.xlen('c-queue')).toBe(0);
    expect(await pendingRows(redis.client, 'c-queue', 'g')).toEqual([]);
    const letters = await deadLetters('c-queue');
    expect(letters.map((letter) => [letter.sourceId, letter.reason, letter.group, letter.consumer, letter.deliveryCount])).toEqual([
      [waiting, 'cancelled', 'g', 'gone-worker', 1],
      [stalled, 'cancelled', 'g', '', 0],
    ]);
    // Both dead-lettered, whatever status says of them now.
    for (const id of [waiting, stalled]) expect((await client.entryStatus('c-queue', id)).state).toBe('dead-lettered');
    // A worker started now reads nothing.
    const handled: unknown[] = [];
    Logger.overrideLogger(false as never);
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100 });
    server.addHandler('c-queue', (async (data: unknown) => void handled.push(data)) as never, true);
    try {
      await new Promise<unknown>((resolve) => void server.listen(resolve));
      await emit('c-queue', { n: 3 });
      await waitFor(() => handled.length === 1, 'the later entry');
      expect(handled).toEqual([{ n: 3 }]);
    } finally {
      await server.close();
      Logger.overrideLogger(true as never);
    }
  });

  it('running: its signal aborts with reason cancelled and the reason given, at the lease renewal; dead-lettered once', async () => {
    let reason: unknown;
    let started = false;
    Logger.overrideLogger(false as never);
    const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', blockMs: 100, recovery: { leaseInterval: 50 } });
    server.addHandler(
      'c-running',
      (async (_data: unknown, ctx: RedisStreamsContext) => {
        started = true;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        reason = ctx.signal.reason;
      }) as never,
      true,
      { minIdleTime: 60_000 },
    );
    try {
      await new Promise<unknown>((resolve) => void server.listen(resolve));
      const id = await emit('c-running', { n: 1 });
      await waitFor(() => started, 'the handler to start');
      expect((await client.cancel('c-running', id, 'customer asked')).previous).toBe('pending');
      await waitFor(() => reason !== undefined, 'the abort');
      expect(reason).toBeInstanceOf(RedisStreamsAbortError);
      expect([(reason as RedisStreamsAbortError).reason, (reason as Error).message]).toEqual(['cancelled', `entry ${id} of "c-running" was cancelled: customer asked`]);
      expect((await deadLetters('c-running')).map((letter) => [letter.sourceId, letter.reason, letter.error])).toEqual([[id, 'cancelled', 'customer asked']]);
      expect(await pendingRows(redis.client, 'c-running', 'g')).toEqual([]);
    } finally {
      await server.close();
      Logger.overrideLogger(true as never);
    }
  });

  it('done or gone: nothing changes; bad input names the option', async () => {
    await redis.client.xgroup('CREATE', 'c-done', 'g', '$', 'MKSTREAM');
    const id = await emit('c-done', { n: 1 });
    await redis.client.xreadgroup('GROUP', 'g', 'w', 'COUNT', 1, 'STREAMS', 'c-done', '>');
    await redis.client.xack('c-done', 'g', id);
    expect(await client.cancel('c-done', id)).toEqual({ stream: 'c-done', id, promotedTo: null, cancelled: false, previous: 'done', key: 'c-done', deadLetter: null });
    expect(await client.cancel('c-done', '1-1')).toEqual({ stream: 'c-done', id: '1-1', promotedTo: null, cancelled: false, previous: 'gone', key: null, deadLetter: null });
    expect(await redis.client.xlen('c-done')).toBe(1);
    await expect(client.cancel('c-done', id, '')).rejects.toThrow('"reason"');
    await expect(client.cancel('c-done', '')).rejects.toThrow('"entryId"');
    await expect(client.cancel('c-done', id, 'x', { deadLetterKey: 'dlq:%s' })).rejects.toThrow('is not in the hash slot');
  });

  it('CLI cancel: exact JSON', async () => {
    await ensureCompiled();
    const hold = await emit('c-cli', { n: 1 }, { delay: 'PT1H' });
    const run = await runCli(['cancel', 'c-cli', hold, '--reason', 'typo', '--url', redis.server.url], {}, { timeoutMs: 30_000 });
    expect([run.code, run.stderr]).toEqual([0, '']);
    const [letter] = await deadLetters('c-cli');
    expect(JSON.parse(run.stdout)).toEqual({ stream: 'c-cli', id: hold, promotedTo: null, cancelled: true, previous: 'held', key: 'c-cli', deadLetter: { key: '{c-cli}:dead', id: letter!.deadLetterId } });
  });
});
