import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_HEADER, parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { moveToDeadLetter } from '../../src/recovery/dead-letter-move.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { DEAD, GROUP, STREAM, useScriptStream } from '../helpers/script-stream.js';

describe('recovery scripts (real redis-server)', () => {
  const { redis, connection, publish, deliver, pel, pendingRow, redisNowMs } = useScriptStream();

  describe('dead-letter move (A1)', () => {
    it('moves an entry with its exact fields and all metadata, then acks it', async () => {
      // Field names that must survive: a header name, a prototype key, and ordinary ones.
      const original = ['data', '{"total":3}', 'dlq:stream', 'not-the-header', '__proto__', 'x', 'pattern', 'orders'];
      const [id] = await publish(1, () => original);
      await deliver('c1', 1);
      // A second delivery (XCLAIM without JUSTID adds one): the count must be carried over.
      await redis.client.xclaim(STREAM, GROUP, 'c1', 0, id!);
      const before = await redisNowMs();

      const result = await moveToDeadLetter(redis.client, {
        stream: STREAM, group: GROUP, ids: [id!], reason: 'max_deliveries', error: 'boom: handler failed', expectedConsumer: 'c1',
      });
      const after = await redisNowMs();

      expect(result.deadLetterKey).toBe(DEAD);
      expect(result.moved).toEqual([id]);
      expect(result.outcomes).toEqual([{ id, status: 'moved', deadLetterId: expect.any(String), consumer: 'c1', deliveryCount: 2 }]);
      expect(await pel()).toEqual([]);

      const rows = await redis.client.xrange(DEAD, '-', '+');
      expect(rows).toHaveLength(1);
      const [deadId, flat] = rows[0]!;
      expect(deadId).toBe(result.outcomes[0]!.deadLetterId);
      // Header by position, then the original fields verbatim.
      expect(flat.filter((_, i) => i % 2 === 0).slice(0, DEAD_LETTER_HEADER.length)).toEqual([...DEAD_LETTER_HEADER]);
      expect(flat.slice(2 * DEAD_LETTER_HEADER.length)).toEqual(original);

      const deadLetter = parseDeadLetter(deadId, flat)!;
      expect(deadLetter).toMatchObject({
        deadLetterId: deadId, sourceStream: STREAM, sourceId: id, group: GROUP, consumer: 'c1', deliveryCount: 2,
        reason: 'max_deliveries', error: 'boom: handler failed', tombstone: false,
      });
      expect({ ...deadLetter.fields }).toEqual({ data: '{"total":3}', 'dlq:stream': 'not-the-header', ['__proto__']: 'x', pattern: 'orders' });
      expect(Object.keys(deadLetter.fields)).toEqual(['data', 'dlq:stream', '__proto__', 'pattern']);
      expect(deadLetter.deadLetteredAt).toBeGreaterThanOrEqual(before);
      expect(deadLetter.deadLetteredAt).toBeLessThanOrEqual(after);
      // The source entry itself stays in the stream (other groups may still read it).
      expect(await redis.client.xlen(STREAM)).toBe(1);
    });

    it('is a no-op when run again: one dead letter, not two', async () => {
      const ids = await publish(3);
      await deliver('c1', 3);
      const request = { stream: STREAM, group: GROUP, ids, reason: 'max_deliveries' };
      const first = await moveToDeadLetter(redis.client, request);
      const second = await moveToDeadLetter(redis.client, request);
      expect(first.moved).toEqual(ids);
      expect(second.moved).toEqual([]);
      expect(second.outcomes.map((o) => o.status)).toEqual(['not_pending', 'not_pending', 'not_pending']);
      expect(await redis.client.xlen(DEAD)).toBe(3);
    });

    it('fails without acking when the dead-letter key has the wrong type: the entry stays pending', async () => {
      const [id] = await publish(1, () => ['data', 'precious']);
      await deliver('c1', 1);
      await redis.client.set(DEAD, 'not a stream');

      await expect(moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: [id!], reason: 'max_deliveries' })).rejects.toThrow(/WRONGTYPE/);

      const row = await pendingRow(id!);
      expect(row?.[1]).toBe('c1');
      expect(row?.[3]).toBe(1);
      expect(await redis.client.xrange(STREAM, id!, id!)).toEqual([[id, ['data', 'precious']]]);
      expect(await redis.client.get(DEAD)).toBe('not a stream');
    });

    it('leaves an entry that another consumer owns, and checks delivery count and idle time', async () => {
      const [id] = await publish(1);
      await deliver('c2', 1);
      const base = { stream: STREAM, group: GROUP, ids: [id!], reason: 'max_deliveries' };

      const notOwner = await moveToDeadLetter(redis.client, { ...base, expectedConsumer: 'c1' });
      expect(notOwner.outcomes).toEqual([{ id, status: 'not_owner', deadLetterId: null, consumer: 'c2', deliveryCount: 1 }]);
      const fewDeliveries = await moveToDeadLetter(redis.client, { ...base, minDeliveries: 2 });
      expect(fewDeliveries.outcomes[0]!.status).toBe('below_min_deliveries');
      const recent = await moveToDeadLetter(redis.client, { ...base, minIdleTime: 3_600_000 });
      expect(recent.outcomes[0]!.status).toBe('not_idle');

      expect((await pendingRow(id!))?.[1]).toBe('c2');
      expect(await redis.client.exists(DEAD)).toBe(0);
    });

    it('writes a tombstone and acks an entry that was deleted while pending', async () => {
      const [gone, kept] = await publish(2);
      await deliver('c1', 2);
      await redis.client.xdel(STREAM, gone!);

      const result = await moveToDeadLetter(redis.client, {
        stream: STREAM, group: GROUP, ids: [gone!, kept!], reason: 'max_deliveries', errors: { [gone!]: 'vanished' },
      });
      expect(result.tombstoned).toEqual([gone]);
      expect(result.moved).toEqual([kept]);
      expect(await pel()).toEqual([]);
      const [[tombId, tombFlat]] = (await redis.client.xrange(DEAD, '-', '+', 'COUNT', 1)) as [string, string[]][];
      expect(parseDeadLetter(tombId, tombFlat)).toMatchObject({
        sourceId: gone, reason: 'trimmed', error: 'vanished', tombstone: true, deliveryCount: 1, consumer: 'c1',
      });
      expect(Object.keys(parseDeadLetter(tombId, tombFlat)!.fields)).toEqual([]);
    });

    it('reports ids of a missing group or stream as not pending', async () => {
      await redis.client.del(STREAM);
      const result = await moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: ['1-0'], reason: 'manual' });
      expect(result.outcomes[0]!.status).toBe('not_pending');
      await redis.client.xadd(STREAM, '*', 'a', '1');
      const noGroup = await moveToDeadLetter(redis.client, { stream: STREAM, group: 'nobody', ids: ['1-0'], reason: 'manual' });
      expect(noGroup.outcomes[0]!.status).toBe('not_pending');
    });

    it('validates its input before any command, naming the option', async () => {
      const base = { stream: STREAM, group: GROUP, ids: ['1-0'], reason: 'manual' };
      await expect(moveToDeadLetter(redis.client, { ...base, ids: ['nope'] })).rejects.toThrow(RedisStreamsOptionError);
      await expect(moveToDeadLetter(redis.client, { ...base, ids: ['nope'] })).rejects.toMatchObject({ option: 'ids' });
      await expect(moveToDeadLetter(redis.client, { ...base, reason: '' })).rejects.toMatchObject({ option: 'reason' });
      await expect(moveToDeadLetter(redis.client, { ...base, batchSize: 0 })).rejects.toMatchObject({ option: 'batchSize' });
      await expect(moveToDeadLetter(redis.client, { ...base, minDeliveries: -1 })).rejects.toMatchObject({ option: 'minDeliveries' });
      await expect(moveToDeadLetter(redis.client, { ...base, deadLetterKey: STREAM })).rejects.toMatchObject({ option: 'deadLetterKey' });
    });

    it('rejects an id whose parts exceed 2^64-1 before any command: a valid id before it is not moved', async () => {
      const [valid] = await publish(1);
      await deliver('c1', 1);
      for (const bad of ['99999999999999999999-0', '1-18446744073709551616']) {
        await expect(
          moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: [valid!, bad], reason: 'manual', batchSize: 1 }),
        ).rejects.toMatchObject({ name: 'RedisStreamsOptionError', option: 'ids' });
      }
      expect((await pendingRow(valid!))?.[1]).toBe('c1');
      expect(await redis.client.exists(DEAD)).toBe(0);
      // The largest id Redis accepts passes validation.
      const max = await moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: ['18446744073709551615-18446744073709551615'], reason: 'manual' });
      expect(max.outcomes[0]!.status).toBe('not_pending');
    });

    it('an entry too large for a script call stays pending (too_large) and the rest of its batch is moved', async () => {
      const big = Array.from({ length: 4_100 }, (_, i) => [`f${i}`, `v${i}`]).flat();
      const ids = await publish(3, (i) => (i === 1 ? big : ['n', String(i)]));
      await deliver('c1', 3);
      await redis.client.call('XCLAIM', STREAM, GROUP, 'c1', 0, ids[1]!); // delivery count 2

      const result = await moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids, reason: 'max_deliveries' });
      expect(result.outcomes.map((o) => [o.id, o.status])).toEqual([[ids[0], 'moved'], [ids[1], 'too_large'], [ids[2], 'moved']]);
      expect(result.moved).toEqual([ids[0], ids[2]]);
      expect((await pel()).map(([id, consumer, , deliveries]) => [id, consumer, deliveries])).toEqual([[ids[1], 'c1', 2]]);
      expect((await redis.client.xrange(DEAD, '-', '+')).map(([id, flat]) => parseDeadLetter(id, flat)!.sourceId)).toEqual([ids[0], ids[2]]);
    });

    it('keeps working after SCRIPT FLUSH (EVALSHA falls back to EVAL on NOSCRIPT)', async () => {
      const ids = await publish(2);
      await deliver('c1', 2);
      await moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: [ids[0]!], reason: 'manual' });
      await redis.client.script('FLUSH');
      const after = await moveToDeadLetter(redis.client, { stream: STREAM, group: GROUP, ids: [ids[1]!], reason: 'manual' });
      expect(after.moved).toEqual([ids[1]]);
      expect(await redis.client.xlen(DEAD)).toBe(2);
    });

    it('dead-letters every id exactly once when 4 movers race over 200 pending ids', async () => {
      const ids = await publish(200);
      await deliver('c1', 200);
      const movers = [connection(), connection(), connection(), connection()];
      const results = await Promise.all(
        movers.map((client) =>
          moveToDeadLetter(client, { stream: STREAM, group: GROUP, ids: shuffled(ids), reason: 'max_deliveries', batchSize: 7 }),
        ),
      );

      const movedByAll = results.flatMap((r) => r.moved);
      expect(movedByAll).toHaveLength(200);
      expect(new Set(movedByAll).size).toBe(200);
      const deadLetters = (await redis.client.xrange(DEAD, '-', '+')).map(([id, flat]) => parseDeadLetter(id, flat)!.sourceId);
      expect(deadLetters).toHaveLength(200);
      expect(new Set(deadLetters)).toEqual(new Set(ids));
      expect(await pel()).toEqual([]);
    });
  });
});

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}
