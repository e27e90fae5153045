import { describe, expect, it } from 'vitest';
import { pendingRows } from '../helpers/stream-state.js';
import type { WorkPayload } from '../fixtures/recovery-worker.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { useWorkerFleets } from '../helpers/use-worker-fleets.js';

/**
 * The lease thread with real worker processes (test/fixtures/recovery-worker.ts): handlers that
 * block the event loop (`block`, `wedge`) while another worker's recovery looks for idle
 * entries every 100 ms. Each worker records `<id>:<deliveryCount>:<consumer>[:start]` in a list.
 */
const MIN_IDLE = 1_000;
const MAX_BLOCKED = 3_000;
/**
 * A block twice minIdleTime: without the thread's renewals the recovering worker would take the
 * entry halfway through it (and a queued entry after the first block already). A third round
 * proved nothing more and cost each test a second an entry.
 */
const BLOCK_MS = 2 * MIN_IDLE;

describe('lease thread: leases hold while a handler blocks the event loop (worker processes, real redis-server)', () => {
  const harness = useWorkerFleets();
  let run = 0;

  function names() {
    run++;
    return { stream: `blocked${run}`, ledger: `blocked-ledger${run}` };
  }

  async function publish(stream: string, payloads: WorkPayload[]): Promise<string[]> {
    // The first worker created the group already (at `$`: what is added from now on).
    await harness.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM').catch((error: Error) => {
      if (!error.message.startsWith('BUSYGROUP')) throw error;
    });
    const ids: string[] = [];
    for (const payload of payloads) ids.push((await harness.client.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify(payload))) as string);
    return ids;
  }

  async function ledger(key: string): Promise<Array<{ id: string; deliveryCount: number; consumer: string; start: boolean }>> {
    return (await harness.client.lrange(key, 0, -1)).map((line) => {
      const [id, count, consumer, marker] = line.split(':') as [string, string, string, string | undefined];
      return { id, deliveryCount: Number(count), consumer, start: marker === 'start' };
    });
  }

  /** One worker takes every entry and blocks on the first; a second one, idle, recovers every 100 ms. */
  async function blockedWhileAnotherRecovers(leases: unknown, payloads: WorkPayload[], ledgerKey: string, stream: string, during?: () => Promise<void>) {
    const config = { url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: payloads.length, concurrency: 1, recovery: { minIdleTime: MIN_IDLE, interval: 100, leases } };
    const fleet = harness.fleet(config);
    await fleet.spawn();
    await threadsConnected(leases === true ? 1 : 0);
    const ids = await publish(stream, payloads);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.start), 'the first handler started', { timeout: 15_000, interval: 20 });
    await fleet.spawn();
    await during?.();
    await waitFor(
      async () => (await ledger(ledgerKey)).filter((r) => !r.start).length >= ids.length && (await pendingRows(harness.client, stream, 'g')).length === 0,
      'every entry handled and nothing pending',
      { timeout: 60_000, interval: 100 },
    );
    return { ids, records: await ledger(ledgerKey) };
  }

  /**
   * Renewals run on the event loop until a worker's thread is connected (it starts with listen()
   * and loads in a second or so on a loaded machine): entries are published once it is.
   */
  async function threadsConnected(count: number): Promise<void> {
    await waitFor(async () => (await leaseConnectionIds()).length === count, `${count} lease thread(s) connected`, { timeout: 15_000, interval: 20 });
  }

  it('a handler that blocks the loop for 2 × minIdleTime runs once per entry, with another worker recovering meanwhile', async () => {
    const { stream, ledger: ledgerKey } = names();
    const payloads = Array.from({ length: 4 }, (_, n) => ({ n, kind: 'block' as const, ms: BLOCK_MS }));
    const { ids, records } = await blockedWhileAnotherRecovers(true, payloads, ledgerKey, stream);
    const starts = records.filter((r) => r.start);
    expect(starts.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(starts.every((r) => r.deliveryCount === 1)).toBe(true);
    expect(records.filter((r) => !r.start).map((r) => r.id).sort()).toEqual([...ids].sort());
  }, 90_000);

  it('entries Redis delivers to a read already out while the loop is blocked are renewed too: no other consumer can take them', async () => {
    const { stream, ledger: ledgerKey } = names();
    // A long blockMs: the read sent before the block is still out in Redis when the second entry comes.
    const config = { url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 4, concurrency: 1, blockMs: 10_000, recovery: { enabled: false, minIdleTime: MIN_IDLE, leases: true } };
    await harness.fleet(config).spawn();
    await threadsConnected(1);
    // The handler settles for 300 ms (the reader sends its next blocking read, slots being free), then blocks 3 × minIdleTime.
    const [first] = await publish(stream, [{ n: 0, kind: 'block', ms: 3 * MIN_IDLE, settleMs: 300 }]);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.start), 'the handler started', { timeout: 15_000, interval: 20 });
    await sleep(600);
    // Answered by Redis to that read, while the worker's loop is blocked: the reply waits unread.
    const [second] = await publish(stream, [{ n: 1, kind: 'ok' }]);
    const isPendingHere = async () => (await pendingRows(harness.client, stream, 'g')).some((row) => row.id === second && row.consumer !== 'thief');
    await waitFor(isPendingHere, 'the second entry delivered to the blocked worker', { timeout: 2_000, interval: 20 });
    expect((await ledger(ledgerKey)).filter((r) => !r.start)).toEqual([]); // still blocked: the setup holds
    // Another consumer's recovery, as often as it likes, until the block ended.
    const stolen: string[] = [];
    while ((await ledger(ledgerKey)).filter((r) => !r.start).length === 0) {
      const [, claimed] = (await harness.client.call('XAUTOCLAIM', stream, 'g', 'thief', MIN_IDLE, '0', 'JUSTID')) as [string, string[]];
      stolen.push(...claimed);
      await sleep(100);
    }
    await waitFor(async () => (await ledger(ledgerKey)).filter((r) => !r.start).length === 2, 'both entries handled', { timeout: 15_000, interval: 50 });
    expect(stolen).toEqual([]);
    expect((await ledger(ledgerKey)).filter((r) => !r.start).map((r) => [r.id, r.deliveryCount])).toEqual([
      [first, 1],
      [second, 1],
    ]);
    // The ledger is written by the handler, the ack follows it.
    await waitFor(async () => (await pendingRows(harness.client, stream, 'g')).length === 0, 'both entries acked', { timeout: 5_000, interval: 20 });
  }, 60_000);

  it("the thread's connection killed (CLIENT KILL) during the blocks: it reconnects, and every entry still runs once", async () => {
    const { stream, ledger: ledgerKey } = names();
    const payloads = Array.from({ length: 3 }, (_, n) => ({ n, kind: 'block' as const, ms: BLOCK_MS }));
    let killed = 0;
    const { ids, records } = await blockedWhileAnotherRecovers(true, payloads, ledgerKey, stream, async () => {
      for (let round = 0; round < 3; round++) {
        await sleep(800);
        killed += await killLeaseConnections();
      }
      // Reconnected under its name while the blocks go on.
      await waitFor(async () => (await leaseConnectionIds()).length === 2, 'both lease threads connected again', { timeout: 10_000, interval: 50 });
    });
    expect(killed).toBeGreaterThanOrEqual(3);
    const starts = records.filter((r) => r.start);
    expect(starts.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(starts.every((r) => r.deliveryCount === 1)).toBe(true);
  }, 90_000);

  it('a process whose event loop is wedged for ever: its entry runs on the other worker after maxBlocked + minIdleTime, not before', async () => {
    const { stream, ledger: ledgerKey } = names();
    const fleet = harness.fleet({
      url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 1, concurrency: 1,
      recovery: { minIdleTime: MIN_IDLE, interval: 100, leases: { maxBlocked: MAX_BLOCKED } },
    });
    const wedged = await fleet.spawn();
    await threadsConnected(1);
    const [id] = await publish(stream, [{ n: 0, kind: 'wedge' }]);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.start), 'the wedged handler started', { timeout: 15_000, interval: 20 });
    const startedAt = Date.now();
    const other = await fleet.spawn();
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.consumer === other.consumer && r.start), 'the other worker ran the entry', {
      timeout: 20_000,
      interval: 20,
    });
    const elapsed = Date.now() - startedAt;
    expect(elapsed).toBeGreaterThanOrEqual(MAX_BLOCKED);
    const records = await ledger(ledgerKey);
    expect(records.filter((r) => r.start).map((r) => [r.id, r.deliveryCount, r.consumer])).toEqual([
      [id, 1, wedged.consumer],
      [id, 2, other.consumer],
    ]);
    expect(wedged.child.exitCode).toBeNull();
  }, 60_000);

  it('kill -9 of a worker whose handler blocks: its thread dies with it, and the other worker runs the entry after minIdleTime', async () => {
    const { stream, ledger: ledgerKey } = names();
    const fleet = harness.fleet({ url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 1, concurrency: 1, recovery: { minIdleTime: MIN_IDLE, interval: 100 } });
    const doomed = await fleet.spawn();
    await threadsConnected(1);
    const [id] = await publish(stream, [{ n: 0, kind: 'block', ms: 60_000 }]);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.start), 'the handler started', { timeout: 15_000, interval: 20 });
    const other = await fleet.spawn();
    await fleet.kill(doomed);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.consumer === other.consumer && r.start), 'the other worker took the entry', {
      timeout: 10_000,
      interval: 20,
    });
    const taken = (await ledger(ledgerKey)).filter((r) => r.start).map((r) => [r.id, r.deliveryCount, r.consumer]);
    expect(taken).toEqual([
      [id, 1, doomed.consumer],
      [id, 2, other.consumer],
    ]);
    // The survivor's thread renews the entry it now blocks on; the victim's connection is gone.
    await waitFor(async () => (await leaseConnectionIds()).length === 1, 'one lease connection left', { timeout: 10_000, interval: 50 });
  }, 60_000);

  it('lazy connect (lease interval 1 s): no lease connection while the worker never blocked; a block of over 2 × minIdleTime from its first entry: the thread connects then and renews, another worker recovering every 100 ms takes nothing', async () => {
    const { stream, ledger: ledgerKey } = names();
    const minIdle = 3_000;
    const fleet = harness.fleet({ url: harness.redis.url, stream, group: 'g', ledger: ledgerKey, prefetch: 1, concurrency: 1, recovery: { minIdleTime: minIdle, interval: 100 } });
    const blocked = await fleet.spawn();
    // Listening for two seconds and more (its connections' age): a thread connecting at start would have connected by now.
    await waitFor(async () => (await streamsConnectionAges()).some((age) => age >= 2), 'the worker connected two seconds ago', { timeout: 15_000, interval: 100 });
    expect(await leaseConnectionIds()).toEqual([]);
    const [id] = await publish(stream, [{ n: 0, kind: 'block', ms: 2 * minIdle + 1_500 }]);
    await waitFor(async () => (await ledger(ledgerKey)).some((r) => r.start), 'the blocking handler started', { timeout: 15_000, interval: 20 });
    const other = await fleet.spawn();
    await waitFor(
      async () => (await ledger(ledgerKey)).some((r) => !r.start) && (await pendingRows(harness.client, stream, 'g')).length === 0,
      'the entry handled and acked',
      { timeout: 30_000, interval: 100 },
    );
    expect((await ledger(ledgerKey)).map((r) => [r.id, r.deliveryCount, r.consumer, r.start])).toEqual([
      [id, 1, blocked.consumer, true],
      [id, 1, blocked.consumer, false],
    ]);
    // The blocked worker's thread connected; the other one's never needed to.
    expect(await leaseConnectionIds()).toHaveLength(1);
    expect(other.child.exitCode).toBeNull();
  }, 60_000);

  /** The age (CLIENT LIST, whole seconds) of each connection this transport opened, lease thread's included. */
  async function streamsConnectionAges(): Promise<number[]> {
    const list = (await harness.client.client('LIST')) as string;
    return list
      .split('\n')
      .filter((line) => line.includes(' name=nestjs-redis-streams:'))
      .map((line) => Number(/(?:^|\s)age=(\d+)/.exec(line)?.[1]));
  }

  async function leaseConnectionIds(): Promise<string[]> {
    const list = (await harness.client.client('LIST')) as string;
    return list
      .split('\n')
      .filter((line) => line.includes(' name=nestjs-redis-streams:lease-renewal '))
      .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1] as string);
  }

  async function killLeaseConnections(): Promise<number> {
    let killed = 0;
    for (const id of await leaseConnectionIds()) killed += Number(await harness.client.client('KILL', 'ID', id));
    return killed;
  }
});
