import type { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { reapConsumers } from '../src/recovery/consumer-reaper.js';
import { DEAD_LETTER_HEADER, parseDeadLetter } from '../src/recovery/dead-letter-format.js';
import { moveToDeadLetter } from '../src/recovery/dead-letter-move.js';
import { handOffEntries, renewLeases } from '../src/recovery/leases.js';
import { RedisStreamsOptionError } from '../src/errors.js';
import { capabilitiesOf } from './helpers/capabilities.js';
import { useRedisServer } from './helpers/use-redis-server.js';
import { waitFor } from './helpers/wait.js';

const STREAM = 'orders';
const DEAD = '{orders}:dead';
const GROUP = 'workers';

type PelRow = [id: string, consumer: string, idle: number, deliveries: number];

describe('recovery scripts (real redis-server)', () => {
  const redis = useRedisServer();
  const extra: Redis[] = [];

  beforeEach(async () => {
    await redis.client.flushall();
    await redis.client.xgroup('CREATE', STREAM, GROUP, '0', 'MKSTREAM');
  });
  afterEach(() => {
    for (const client of extra.splice(0)) client.disconnect();
  });

  function connection(): Redis {
    const client = redis.server.client();
    extra.push(client);
    return client;
  }

  async function publish(count: number, fields: (i: number) => string[] = (i) => ['n', String(i)]): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await redis.client.xadd(STREAM, '*', ...fields(i))) as string);
    return ids;
  }

  /** XREADGROUP `count` new entries as `consumer`; they become pending for it with 1 delivery. */
  async function deliver(consumer: string, count: number): Promise<string[]> {
    const reply = (await redis.client.xreadgroup('GROUP', GROUP, consumer, 'COUNT', count, 'STREAMS', STREAM, '>')) as
      | [string, [string, string[]][]][]
      | null;
    return (reply?.[0]?.[1] ?? []).map(([id]) => id);
  }

  async function pel(): Promise<PelRow[]> {
    return (await redis.client.xpending(STREAM, GROUP, '-', '+', 10_000)) as PelRow[];
  }

  async function pendingRow(id: string): Promise<PelRow | undefined> {
    return ((await redis.client.xpending(STREAM, GROUP, id, id, 1)) as PelRow[])[0];
  }

  async function redisNowMs(): Promise<number> {
    const [seconds, micros] = await redis.client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

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

  describe('lease renewal (A4) and handoff (A10)', () => {
    it('renews own entries: idle resets, delivery count unchanged', async () => {
      const ids = await publish(3);
      await deliver('c1', 3);
      // Age the entries without a new delivery (JUSTID keeps the count at 1).
      await redis.client.xclaim(STREAM, GROUP, 'c1', 0, ...ids, 'IDLE', 600_000, 'JUSTID');
      for (const id of ids) expect((await pendingRow(id))![2]).toBeGreaterThanOrEqual(600_000);

      const renewal = await renewLeases(redis.client, { stream: STREAM, group: GROUP, consumer: 'c1', ids });

      expect(renewal).toEqual({ renewed: ids, lost: [] });
      for (const id of ids) {
        const [, owner, idle, deliveries] = (await pendingRow(id))!;
        expect(owner).toBe('c1');
        expect(idle).toBeLessThan(600_000);
        expect(deliveries).toBe(1);
      }
    });

    it('never steals back an entry another consumer claimed; reports it lost', async () => {
      const [mine, stolen, acked, deleted] = await publish(4);
      await deliver('c1', 4);
      await redis.client.xclaim(STREAM, GROUP, 'c2', 0, stolen!);
      await redis.client.xack(STREAM, GROUP, acked!);
      await redis.client.xdel(STREAM, deleted!);

      const renewal = await renewLeases(redis.client, { stream: STREAM, group: GROUP, consumer: 'c1', ids: [mine!, stolen!, acked!, deleted!] });

      // Redis 6.2 (no lagTracking) cannot tell a deleted entry: it stays pending and counts as renewed (docs/dead-letters.md).
      const { lagTracking } = await capabilitiesOf(redis.client);
      expect(renewal.renewed).toEqual(lagTracking ? [mine] : [mine, deleted]);
      expect(renewal.lost).toEqual([
        { id: stolen, reason: 'not_owner', owner: 'c2' },
        { id: acked, reason: 'not_pending', owner: null },
        ...(lagTracking ? [{ id: deleted, reason: 'deleted', owner: null }] : []),
      ]);
      const [, owner, , deliveries] = (await pendingRow(stolen!))!;
      expect(owner).toBe('c2');
      expect(deliveries).toBe(2);
    });

    it('hands off own entries to the handoff consumer, claimable at once, count unchanged', async () => {
      const [mine, theirs] = await publish(2);
      await deliver('c1', 2);
      await redis.client.xclaim(STREAM, GROUP, 'c2', 0, theirs!);

      const result = await handOffEntries(redis.client, {
        stream: STREAM, group: GROUP, consumer: 'c1', handoffConsumer: 'handoff', ids: [mine!, theirs!],
      });

      expect(result).toEqual({ handedOff: [mine], lost: [{ id: theirs, reason: 'not_owner', owner: 'c2' }] });
      const [, owner, idle, deliveries] = (await pendingRow(mine!))!;
      expect(owner).toBe('handoff');
      expect(idle).toBeGreaterThanOrEqual(1_000_000_000_000);
      expect(deliveries).toBe(1);
      expect((await pendingRow(theirs!))![1]).toBe('c2');
      // Any claimer with a realistic min-idle takes it at once.
      const [, claimed] = (await redis.client.xautoclaim(STREAM, GROUP, 'c3', 60_000, '0-0', 'COUNT', 10, 'JUSTID')) as [string, string[]];
      expect(claimed).toEqual([mine]);
    });
  });

  describe('consumer reap (A9)', () => {
    it('never removes a consumer that holds pending entries while a reader races it (500 iterations)', async () => {
      const published = await publish(500);
      const reader = connection();
      const reaper = connection();
      const acked: string[] = [];
      const ackReplies: number[] = [];
      let held: string | undefined;
      let done = false;
      let deletions = 0;

      const readLoop = async () => {
        for (let i = 0; i < 500; i++) {
          await yieldRandomly();
          const reply = (await reader.xreadgroup('GROUP', GROUP, 'C', 'COUNT', 1, 'STREAMS', STREAM, '>')) as
            | [string, [string, string[]][]][]
            | null;
          const id = reply?.[0]?.[1]?.[0]?.[0];
          if (id === undefined) throw new Error(`iteration ${i}: nothing read`);
          await yieldRandomly();
          // C holds at most 2 entries and is drained to 0 about every other iteration.
          // Either hold the new entry (acking the one held before) or ack both and drain C.
          const toAck = Math.random() < 0.5 ? [held] : [id, held];
          held = toAck.includes(id) ? undefined : id;
          for (const ackId of toAck) {
            if (ackId === undefined) continue;
            ackReplies.push(await reader.xack(STREAM, GROUP, ackId));
            acked.push(ackId);
          }
        }
        done = true;
      };
      const reapLoop = async () => {
        while (!done) {
          const { deleted } = await reapConsumers(reaper, { stream: STREAM, group: GROUP, consumers: ['C'] });
          deletions += deleted.length;
          await yieldRandomly();
        }
      };
      await Promise.all([readLoop(), reapLoop()]);

      const pendingIds = (await pel()).map(([id]) => id);
      // Every published id is acked (and XACK found it pending) or still pending: none vanished.
      expect(ackReplies.every((n) => n === 1)).toBe(true);
      expect(new Set([...acked, ...pendingIds])).toEqual(new Set(published));
      expect(acked.length + pendingIds.length).toBe(500);
      // The race was real: the reaper did delete C (drained) at some moments.
      expect(deletions).toBeGreaterThan(0);
    });

    it('the race check can fail: a plain DELCONSUMER drops the pending ids', async () => {
      const ids = await publish(2);
      await deliver('C', 2);
      await redis.client.xgroup('DELCONSUMER', STREAM, GROUP, 'C');
      expect(await pel()).toEqual([]);
      expect(await redis.client.xack(STREAM, GROUP, ...ids)).toBe(0);
    });

    it('removes drained idle consumers and keeps busy, active, leased and unknown ones', async () => {
      await publish(4);
      const [drainedId] = await deliver('drained', 1);
      await redis.client.xack(STREAM, GROUP, drainedId!);
      await deliver('busy', 1);
      const [leasedId] = await deliver('leased', 1);
      await redis.client.xack(STREAM, GROUP, leasedId!);
      await redis.client.set('{orders}:lease:leased', '1');
      await waitFor(async () => {
        const rows = (await redis.client.xinfo('CONSUMERS', STREAM, GROUP)) as unknown[];
        return rows.length === 3 && rows.every((row) => idleOf(row) >= 1);
      }, 'consumers idle for at least 1 ms');

      const result = await reapConsumers(redis.client, {
        stream: STREAM, group: GROUP, consumers: ['drained', 'busy', 'leased', 'ghost'], minIdleTime: 1,
        leaseKey: (consumer) => `{orders}:lease:${consumer}`,
      });
      expect(result.outcomes).toEqual([
        { consumer: 'drained', status: 'deleted' },
        { consumer: 'busy', status: 'has_pending' },
        { consumer: 'leased', status: 'lease_alive' },
        { consumer: 'ghost', status: 'missing' },
      ]);
      expect(result.deleted).toEqual(['drained']);

      const active = await reapConsumers(redis.client, { stream: STREAM, group: GROUP, consumers: ['leased'], minIdleTime: 3_600_000 });
      expect(active.outcomes).toEqual([{ consumer: 'leased', status: 'active' }]);
      const names = ((await redis.client.xinfo('CONSUMERS', STREAM, GROUP)) as unknown[]).map(nameOf).sort();
      expect(names).toEqual(['busy', 'leased']);
      expect((await pel()).map((row) => row[1])).toEqual(['busy']);
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

/** 0-3 turns of the event loop, so the two connections interleave differently each iteration. */
async function yieldRandomly(): Promise<void> {
  const turns = Math.floor(Math.random() * 4);
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** XINFO CONSUMERS rows arrive as flat arrays (RESP2) or maps (RESP3), depending on the client. */
function infoField(row: unknown, field: string): unknown {
  if (Array.isArray(row)) return row[row.indexOf(field) + 1];
  if (row instanceof Map) return row.get(field);
  return (row as Record<string, unknown>)[field];
}

function idleOf(row: unknown): number {
  return Number(infoField(row, 'idle'));
}

function nameOf(row: unknown): string {
  return String(infoField(row, 'name'));
}
