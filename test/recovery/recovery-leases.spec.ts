import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RecoveryOptions } from '../../src/recovery/recovery-options.js';
import { tasks, useRecoveryWorkers } from '../fixtures/recovery-tasks.js';
import { pendingRows } from '../helpers/stream-state.js';
import { waitFor } from '../helpers/wait.js';

const { handled } = tasks;

describe('recovery provider: leases (real redis-server, in-process servers)', () => {
  const workers = useRecoveryWorkers();
  const { recovery, freshPrefix, worker } = workers;
  let client: Redis;
  beforeAll(() => {
    client = workers.client();
  });

  // Renewals come every LEASE_IDLE / 3 (or every 50 ms with extendLease): a stall of the event loop
  // longer than the rest of LEASE_IDLE lets a lease lapse, so it is far above a loaded machine's stalls.
  const LEASE_IDLE = 500;

  /** Worker A runs one held entry; worker B (recovery every 40 ms) starts once A runs it. */
  async function heldEntry(prefix: string, aRecovery: RecoveryOptions, payload: Record<string, unknown> = {}) {
    const stream = `${prefix}tasks`;
    await client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const a = await worker(prefix, 'A', aRecovery, { prefetch: 1, concurrency: 1 });
    const id = (await client.xadd(stream, '*', 'pattern', 'tasks', 'data', JSON.stringify({ kind: 'held', ...payload }))) as string;
    await waitFor(() => handled.length === 1, 'A started the held entry', { timeout: 20_000 });
    const b = await worker(prefix, 'B', { minIdleTime: LEASE_IDLE, interval: 40 }, { prefetch: 1, concurrency: 1 });
    return { stream, id, a, b };
  }

  function ticksOfB(): number {
    return recovery.stats({ consumer: 'B' })[0]?.stats.ticks ?? 0;
  }

  /**
   * Lets A's handler run on for `ms` after B started, and until B's recovery ticked at least 10
   * times (B had its chances however slow the timers are); records the delivery counts seen meanwhile.
   */
  async function runWhileBRecovers(stream: string, ms: number): Promise<Set<number>> {
    const counts = new Set<number>();
    const until = Date.now() + ms;
    await waitFor(async () => {
      for (const row of await pendingRows(client, stream, 'g')) counts.add(row.deliveries);
      return Date.now() >= until && ticksOfB() >= 10;
    }, `${ms} ms and 10 recovery ticks of B`, { timeout: 30_000, interval: 25 });
    return counts;
  }

  it('a handler running 5 × minIdleTime is renewed and never taken: handled once, delivery count stays 1', async () => {
    const { stream, id } = await heldEntry(freshPrefix(), { minIdleTime: LEASE_IDLE, interval: 40 });
    const counts = await runWhileBRecovers(stream, 5 * LEASE_IDLE);
    tasks.heldReleased = true;
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'held entry acked', { timeout: 20_000 });
    expect(handled).toEqual([expect.objectContaining({ id, consumer: 'A', deliveryCount: 1 })]);
    expect([...counts]).toEqual([1]);
  });

  it('ctx.extendLease() keeps the entry when the timer renews too rarely', async () => {
    const { stream, id } = await heldEntry(freshPrefix(), { minIdleTime: LEASE_IDLE, leaseInterval: 60_000 }, { extend: true });
    const counts = await runWhileBRecovers(stream, 5 * LEASE_IDLE);
    tasks.heldReleased = true;
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'held entry acked', { timeout: 20_000 });
    expect(handled).toEqual([expect.objectContaining({ id, consumer: 'A', deliveryCount: 1 })]);
    expect([...counts]).toEqual([1]);
  });

  it('with leases off another worker takes the entry after minIdleTime (handled twice, count 2)', async () => {
    const { stream, id } = await heldEntry(freshPrefix(), { minIdleTime: LEASE_IDLE, leases: false });
    await waitFor(() => handled.length === 2, 'B took the entry', { timeout: 20_000 });
    expect(handled.map((h) => [h.id, h.consumer, h.deliveryCount])).toEqual([[id, 'A', 1], [id, 'B', 2]]);
    tasks.heldReleased = true;
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'acked', { timeout: 20_000 });
  });

  it('a late renewal after a takeover reports the loss and does not take the entry back', async () => {
    // A renews only every 3 × minIdleTime: B takes the entry first; A's next renewal must lose.
    const { stream, id, a } = await heldEntry(freshPrefix(), { minIdleTime: LEASE_IDLE, leaseInterval: 3 * LEASE_IDLE });
    await waitFor(() => handled.length === 2, 'B took the entry', { timeout: 20_000 });
    await waitFor(() => a.events.leasesLost.length === 1, 'A saw its lease lost', { timeout: 20_000 });
    expect(a.events.leasesLost[0]).toMatchObject({ stream, group: 'g', id, reason: 'not_owner', owner: 'B' });
    // Still B's, never back to A (both handlers still run).
    expect(await pendingRows(client, stream, 'g')).toEqual([expect.objectContaining({ id, consumer: 'B', deliveries: 2 })]);
  });
});
