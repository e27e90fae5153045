import { describe, expect, it } from 'vitest';
import { reapConsumers } from '../../src/recovery/consumer-reaper.js';
import { handOffEntries, renewLeases } from '../../src/recovery/leases.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { GROUP, STREAM, useScriptStream } from '../helpers/script-stream.js';
import { waitFor } from '../helpers/wait.js';

describe('recovery scripts: leases, handoff, consumer reap (real redis-server)', () => {
  const { redis, connection, publish, deliver, pel, pendingRow } = useScriptStream();

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
