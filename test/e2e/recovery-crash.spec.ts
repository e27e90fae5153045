import { describe, expect, it } from 'vitest';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { pendingRows } from '../helpers/stream-state.js';
import type { WorkPayload } from '../fixtures/recovery-worker.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';

/**
 * Fault tests with real worker processes (test/fixtures/recovery-worker.ts): SIGKILL at random
 * moments, crashes between handler and XACK, poison entries that throw or kill their process.
 * Each worker records `<id>:<deliveryCount>:<consumer>` in a Redis list inside its handler.
 */
const MIN_IDLE = 400;
/**
 * The kill test asserts that only killed workers' entries run twice: a live worker's lease must
 * not lapse, so its renewals (every minIdleTime / 3) must outlast the stalls of a worker process
 * starved on a loaded machine. 400 ms left 267 ms, which a full suite under load exceeded.
 */
const KILL_MIN_IDLE = 2_000;

describe('recovery with crashing worker processes (real redis-server)', () => {
  const harness = useWorkerFleets();
  let run = 0;

  function names() {
    run++;
    return { stream: `crash${run}`, ledger: `ledger${run}`, dead: `{crash${run}}:dead` };
  }

  async function publish(stream: string, payloads: WorkPayload[]): Promise<string[]> {
    await harness.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const pipeline = harness.client.pipeline();
    for (const payload of payloads) pipeline.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify(payload));
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([error, id]) => {
      if (error) throw error;
      return id as string;
    });
  }

  async function ledger(key: string): Promise<Array<{ id: string; deliveryCount: number; consumer: string }>> {
    return (await harness.client.lrange(key, 0, -1)).map((line) => {
      const [id, count, consumer] = line.split(':') as [string, string, string];
      return { id, deliveryCount: Number(count), consumer };
    });
  }

  it('kill -9 of workers at random moments during 3000 entries: every id handled, nothing pending, duplicates bounded by prefetch × kills', async () => {
    const { stream, ledger: ledgerKey } = names();
    const prefetch = 8;
    const ids = await publish(stream, Array.from({ length: 3000 }, (_, n) => ({ n, kind: 'ok' as const })));
    const fleet = harness.fleet({
      url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch, concurrency: 4, sleepMs: [5, 15],
      recovery: { minIdleTime: KILL_MIN_IDLE, interval: 100 },
    });
    await Promise.all([fleet.spawn(), fleet.spawn(), fleet.spawn()]);
    let kills = 0;
    const killed = new Set<string>();
    for (let i = 0; i < 5; i++) {
      await sleep(150 + Math.random() * 250);
      if ((await harness.client.llen(ledgerKey)) >= ids.length) break; // finished before this kill
      const victim = await fleet.kill();
      if (victim) killed.add(victim.consumer);
      kills++;
      await fleet.spawn();
    }
    await waitFor(async () => {
      const handled = new Set((await ledger(ledgerKey)).map((r) => r.id));
      return handled.size === ids.length && (await pendingRows(harness.client, stream, 'g')).length === 0;
    }, 'every id handled and nothing pending', { timeout: 90_000, interval: 200 });

    const records = await ledger(ledgerKey);
    const times = new Map<string, number>();
    for (const r of records) times.set(r.id, (times.get(r.id) ?? 0) + 1);
    expect(new Set(times.keys())).toEqual(new Set(ids));
    const duplicated = [...times].filter(([, n]) => n > 1).map(([id]) => id);
    expect(kills).toBeGreaterThan(0);
    expect(records.length - ids.length).toBeLessThanOrEqual(prefetch * kills);
    // A duplicate is a redelivery of an entry in flight at a crash: its first run was in a worker
    // that was then killed, and its later run saw a delivery count of 2 or more.
    for (const id of duplicated) {
      const runs = records.filter((r) => r.id === id);
      expect(killed.has(runs[0]!.consumer), `${id} first ran in ${runs[0]!.consumer}, not a killed worker`).toBe(true);
      expect(Math.max(...runs.map((r) => r.deliveryCount)), id).toBeGreaterThanOrEqual(2);
    }
    expect(await harness.client.xlen(`{${stream}}:dead`)).toBe(0);
  }, 120_000);

  it('a crash after the handler but before XACK: another worker handles the entry again with delivery count ≥ 2', async () => {
    const { stream, ledger: ledgerKey } = names();
    const [first, crashing, last] = await publish(stream, [{ n: 1, kind: 'ok' }, { n: 2, kind: 'crash-after' }, { n: 3, kind: 'ok' }]);
    const fleet = harness.fleet({ url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 1, concurrency: 1, recovery: { minIdleTime: MIN_IDLE, interval: 100 } });
    const victim = await fleet.spawn();
    await victim.exited;
    await fleet.spawn();
    await waitFor(async () => (await pendingRows(harness.client, stream, 'g')).length === 0 && (await harness.client.llen(ledgerKey)) === 4, 'all handled', { timeout: 60_000 });
    const records = await ledger(ledgerKey);
    const runs = records.filter((r) => r.id === crashing);
    expect(runs.map((r) => r.deliveryCount)).toEqual([1, expect.any(Number)]);
    expect(runs[1]!.deliveryCount).toBeGreaterThanOrEqual(2);
    expect(runs[0]!.consumer).toBe(victim.consumer);
    expect(runs[1]!.consumer).not.toBe(victim.consumer);
    expect(records.filter((r) => r.id === first || r.id === last)).toHaveLength(2);
  }, 90_000);

  it('a handler that always throws: handled maxDeliveries times (at most one more), then exactly one dead letter with every field', async () => {
    const { stream, ledger: ledgerKey, dead } = names();
    const [poison, fine] = (await publish(stream, [{ n: 7, kind: 'throw' }, { n: 8, kind: 'ok' }])) as [string, string];
    const fleet = harness.fleet({ url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, recovery: { minIdleTime: 200, interval: 50, maxDeliveries: 3 } });
    const worker = await fleet.spawn();
    await waitFor(async () => (await harness.client.xlen(dead)) === 1 && (await pendingRows(harness.client, stream, 'g')).length === 0, 'poison dead-lettered', { timeout: 60_000 });
    await sleep(300); // a stray extra delivery would show up now
    const runs = (await ledger(ledgerKey)).filter((r) => r.id === poison);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.length).toBeLessThanOrEqual(4);
    expect(runs.slice(0, 3).map((r) => r.deliveryCount)).toEqual([1, 2, 3]);
    const entries = (await harness.client.xrange(dead, '-', '+')) as Array<[string, string[]]>;
    expect(entries).toHaveLength(1);
    const letter = parseDeadLetter(entries[0]![0], entries[0]![1])!;
    expect(letter).toMatchObject({
      sourceStream: stream,
      sourceId: poison,
      group: 'g',
      consumer: worker.consumer,
      deliveryCount: 3,
      reason: 'max_deliveries',
      error: 'RpcException: order 7 is poison',
      tombstone: false,
    });
    expect({ ...letter.fields }).toEqual({ pattern: stream, data: JSON.stringify({ n: 7, kind: 'throw' }) });
    const serverNow = Number((await harness.client.time())[0]) * 1000;
    expect(Math.abs(serverNow - letter.deadLetteredAt)).toBeLessThan(60_000);
    expect((await ledger(ledgerKey)).filter((r) => r.id === fine)).toHaveLength(1);
  }, 90_000);

  it('a handler that kills its process on one entry (crash loop, respawned): same bound, so the count comes from Redis', async () => {
    const { stream, ledger: ledgerKey, dead } = names();
    const ids = await publish(stream, [{ n: 9, kind: 'crash-loop' }, ...Array.from({ length: 20 }, (_, n) => ({ n, kind: 'ok' as const }))]);
    const poison = ids[0]!;
    // prefetch 1: a crashing worker holds only the entry it runs. (Entries it had prefetched would
    // be claimed again after each crash and count deliveries too: see docs/recovery.md.)
    const fleet = harness.fleet({ url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 1, concurrency: 1, recovery: { minIdleTime: 300, interval: 60, maxDeliveries: 3 } });
    fleet.respawnOnExit();
    await Promise.all([fleet.spawn(), fleet.spawn()]);
    // "Nothing pending" alone can come before a respawned worker has read the last entries.
    await waitFor(
      async () =>
        (await harness.client.xlen(dead)) === 1 &&
        new Set((await ledger(ledgerKey)).map((r) => r.id)).size === ids.length &&
        (await pendingRows(harness.client, stream, 'g')).length === 0,
      'crash-loop entry dead-lettered, every entry handled, nothing pending',
      { timeout: 60_000, interval: 100 },
    );
    fleet.respawnOnExit(false);
    const runs = (await ledger(ledgerKey)).filter((r) => r.id === poison);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.length).toBeLessThanOrEqual(4);
    expect(new Set(runs.map((r) => r.consumer)).size).toBe(runs.length); // each run killed a different process
    const entries = (await harness.client.xrange(dead, '-', '+')) as Array<[string, string[]]>;
    const letter = parseDeadLetter(entries[0]![0], entries[0]![1])!;
    expect(letter).toMatchObject({ sourceId: poison, reason: 'max_deliveries', error: '' });
    expect(letter.deliveryCount).toBeGreaterThanOrEqual(3);
    expect(new Set((await ledger(ledgerKey)).map((r) => r.id))).toEqual(new Set(ids));
  }, 90_000);
});
