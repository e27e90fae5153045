import { describe, expect, it } from 'vitest';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { pendingRows } from '../helpers/stream-state.js';
import type { WorkPayload } from '../fixtures/recovery-worker.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';

/**
 * Batch handlers (extras.batch) in real worker processes killed with SIGKILL mid-batch: each
 * batch sleeps in its handler, so a kill lands while batches run and others are collected.
 * Workers record `<id>:<deliveryCount>:<consumer>` for each entry they handled, and mark
 * poison entries failed (ctx.fail) so that they are dead-lettered after maxDeliveries.
 */
/** Long enough that a live worker's leases (renewed every minIdleTime / 3) survive a loaded machine. */
const KILL_MIN_IDLE = 2_000;

describe('batch handlers with crashing worker processes (real redis-server)', () => {
  const harness = useWorkerFleets();

  it('kill -9 of batch workers mid-batch: every id handled or dead-lettered (poison ones once each), nothing pending', async () => {
    const stream = 'batchcrash';
    const ledgerKey = 'batchledger';
    const dead = `{${stream}}:dead`;
    await harness.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const payloads: WorkPayload[] = Array.from({ length: 3_000 }, (_, n) => ({ n, kind: n % 250 === 7 ? ('throw' as const) : ('ok' as const) }));
    const pipeline = harness.client.pipeline();
    for (const payload of payloads) pipeline.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify(payload));
    const ids = ((await pipeline.exec()) ?? []).map(([error, id]) => {
      if (error) throw error;
      return id as string;
    });
    const poison = new Set(ids.filter((_, n) => payloads[n]!.kind === 'throw'));
    const prefetch = 40;
    const fleet = harness.fleet({
      url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch, concurrency: 2, sleepMs: [50, 150],
      batch: { size: 20, waitMs: 20 },
      extras: { maxDeliveries: 2 },
      recovery: { minIdleTime: KILL_MIN_IDLE, interval: 100 },
    });
    await Promise.all([fleet.spawn(), fleet.spawn(), fleet.spawn()]);
    let kills = 0;
    const killed = new Set<string>();
    for (let i = 0; i < 5; i++) {
      await sleep(150 + Math.random() * 250);
      if ((await harness.client.llen(ledgerKey)) >= ids.length - poison.size) break; // finished before this kill
      const victim = await fleet.kill();
      if (victim) killed.add(victim.consumer);
      kills++;
      await fleet.spawn();
    }
    const letters = async () =>
      ((await harness.client.xrange(dead, '-', '+')) as Array<[string, string[]]>).map(([id, flat]) => parseDeadLetter(id, flat)!);
    await waitFor(
      async () => {
        const settled = new Set((await harness.client.lrange(ledgerKey, 0, -1)).map((line) => line.split(':')[0]));
        for (const letter of await letters()) settled.add(letter.sourceId);
        return settled.size === ids.length && (await pendingRows(harness.client, stream, 'g')).length === 0;
      },
      'every id handled or dead-lettered and nothing pending',
      { timeout: 90_000, interval: 200 },
    );

    const records = (await harness.client.lrange(ledgerKey, 0, -1)).map((line) => {
      const [id, count, consumer] = line.split(':') as [string, string, string];
      return { id, deliveryCount: Number(count), consumer };
    });
    const deadLetters = await letters();
    expect(kills).toBeGreaterThan(0);
    // Kills landed mid-batch: the entries a killed worker held came back (claimed) and ran in other workers' batches.
    expect(records.some((r) => r.deliveryCount >= 2 && killed.size > 0)).toBe(true);
    // Each poison entry: never recorded, dead-lettered exactly once; with its own ctx.fail error
    // when the worker that failed it dead-letters it (handler errors are remembered per process:
    // another worker's recovery knows none, as for single entries, docs/recovery.md).
    for (const id of poison) {
      expect(records.filter((r) => r.id === id)).toHaveLength(0);
      const mine = deadLetters.filter((letter) => letter.sourceId === id);
      expect(mine, id).toHaveLength(1);
      expect(mine[0]).toMatchObject({ reason: 'max_deliveries', error: expect.stringMatching(/^(RpcException: order \d+ is poison)?$/) });
    }
    // No entry dead-lettered twice; a good entry only if it was in flight in killed workers more than maxDeliveries times.
    expect(new Set(deadLetters.map((letter) => letter.sourceId)).size).toBe(deadLetters.length);
    // Every good entry handled; a duplicate only after a kill (its first run in a killed worker, the next with count ≥ 2).
    const handled = new Set(records.map((r) => r.id));
    const goodDead = deadLetters.filter((letter) => !poison.has(letter.sourceId));
    for (const id of ids) if (!poison.has(id)) expect(handled.has(id) || goodDead.some((letter) => letter.sourceId === id), id).toBe(true);
    const runs = new Map<string, typeof records>();
    for (const record of records) runs.set(record.id, [...(runs.get(record.id) ?? []), record]);
    for (const [id, list] of runs) {
      if (list.length === 1) continue;
      expect(killed.has(list[0]!.consumer), `${id} first ran in ${list[0]!.consumer}, not a killed worker`).toBe(true);
      expect(Math.max(...list.map((r) => r.deliveryCount)), id).toBeGreaterThanOrEqual(2);
    }
  }, 150_000);
});
