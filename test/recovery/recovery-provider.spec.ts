import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import { ServerRecoveryHost } from '../../src/server/server-recovery-host.js';
import { makeIdle } from '../helpers/claim-fixtures.js';
import { MIN_IDLE, tasks, useRecoveryWorkers } from '../fixtures/recovery-tasks.js';
import { pendingRows } from '../helpers/stream-state.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** minIdleTime of the test that asserts a fresh entry is not taken: far above a round trip and a tick. */
const FRESH_IDLE = 1_000;
const { handled } = tasks;

describe('recovery provider (real redis-server, in-process servers)', () => {
  const workers = useRecoveryWorkers();
  const { recovery, freshPrefix, worker, makeBusy, pendingFor, deliverTimes } = workers;
  let client: Redis;
  beforeAll(() => {
    client = workers.client();
  });

  it('takes over a dead consumer\'s entries after minIdleTime and hands them to the handlers (runOnce with scheduling off)', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    // The entries become pending after the worker started, so however slow its start, the first
    // tick comes a round trip after them: far below FRESH_IDLE.
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: FRESH_IDLE });
    const ids = await pendingFor(stream, 'dead', [{}, {}, {}]);
    // Not idle long enough yet: nothing is taken.
    expect((await recovery.runOnce({ consumer: 'w1' })).claimed).toBe(0);
    await waitFor(async () => (await pendingRows(client, stream, 'g')).every((row) => row.idle >= FRESH_IDLE), 'entries idle for minIdleTime (Redis clock)');
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick.claimed).toBe(3);
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'recovered entries acked');
    expect(handled.map((h) => [h.id, h.consumer, h.deliveryCount])).toEqual(ids.map((id) => [id, 'w1', 2]));
    expect(recovery.stats({ consumer: 'w1' })[0]).toMatchObject({ consumer: 'w1', scheduled: false, stats: { claimed: 3, ticks: 2 } });
    expect(w.events.errors).toEqual([]);
  });

  it('the timer recovers without runOnce, and never takes no more than the free prefetch slots', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    await pendingFor(stream, 'dead', Array.from({ length: 12 }, () => ({})));
    await sleep(MIN_IDLE);
    // prefetch 4: every claim is at most the free slots, so dead's pending list drains 4 at a time.
    const samples: number[] = [];
    await worker(prefix, 'w1', { minIdleTime: MIN_IDLE, interval: 50 }, { prefetch: 4, concurrency: 4 });
    await waitFor(async () => {
      const rows = await pendingRows(client, stream, 'g');
      samples.push(rows.filter((row) => row.consumer === 'w1').length);
      return rows.length === 0;
    }, 'all recovered', { timeout: 10_000, interval: 5 });
    expect(handled).toHaveLength(12);
    expect(Math.max(...samples)).toBeLessThanOrEqual(4);
  });

  it('reaches idle entries behind a long run of live ones within the expected number of ticks (cursor kept across ticks)', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const live = await pendingFor(stream, 'live', Array.from({ length: 2000 }, () => ({})));
    const orphans = await pendingFor(stream, 'dead', Array.from({ length: 5 }, () => ({})));
    // Only the orphans are idle (made so on Redis' clock): the live entries at the head of the pending
    // list stay far younger than a 10-minute minIdleTime however slow the set-up and the ticks are.
    await makeIdle(client, stream, 'g', 'dead', orphans);
    await worker(prefix, 'w1', { enabled: false, minIdleTime: 600_000, pageSize: 100, maxPages: 10 });
    // 1000 pending rows per tick: the 5 orphans (rows 2001..2005) need ceil(2005 / 1000) = 3 ticks.
    let ticks = 0;
    let claimed = 0;
    while (claimed < orphans.length && ticks < 3) {
      claimed += (await recovery.runOnce({ consumer: 'w1' })).claimed;
      ticks++;
    }
    expect(claimed).toBe(5);
    await waitFor(() => handled.length === 5, 'orphans handled');
    expect(handled.map((h) => h.id).sort()).toEqual([...orphans].sort());
    // The live consumer kept every one of its entries.
    expect((await pendingRows(client, stream, 'g', 'live')).map((row) => row.id)).toEqual(live);
  });

  it('dead-letters an entry delivered maxDeliveries times with its fields and metadata, exactly once, and reports it', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const [poison, fine] = (await pendingFor(stream, 'dead', [{ n: 1 }, { n: 2 }])) as [string, string];
    await deliverTimes(stream, 'dead', [poison], 3);
    await sleep(MIN_IDLE + 50);
    const letters: DeadLetterNotice[] = [];
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 3, onDeadLetter: (letter) => void letters.push(letter) });
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick).toMatchObject({ claimed: 1, deadLettered: 1 });
    expect(letters).toEqual([
      expect.objectContaining({ stream, group: 'g', id: poison, reason: 'max_deliveries', deliveryCount: 3, consumer: 'dead', deadLetterKey: `{${stream}}:dead`, tombstone: false }),
    ]);
    expect(w.events.deadLetters.map((d) => d.id)).toEqual([poison]);
    const dead = (await client.xrange(`{${stream}}:dead`, '-', '+')) as Array<[string, string[]]>;
    expect(dead).toHaveLength(1);
    const letter = parseDeadLetter(dead[0]![0], dead[0]![1]);
    expect(letter).toMatchObject({ sourceStream: stream, sourceId: poison, group: 'g', consumer: 'dead', deliveryCount: 3, reason: 'max_deliveries' });
    expect({ ...letter!.fields }).toEqual({ pattern: 'tasks', data: '{"n":1}' });
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'nothing pending');
    expect(handled.map((h) => h.id)).toEqual([fine]);
    // A second run finds nothing more to do.
    expect(await recovery.runOnce({ consumer: 'w1' })).toMatchObject({ claimed: 0, deadLettered: 0 });
    expect(await client.xlen(`{${stream}}:dead`)).toBe(1);
  });

  it('an entry handed off at shutdown keeps its delivery count: with maxDeliveries 1 it still runs once; one that ran already is dead-lettered', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    await client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    // A fetches a held entry and a second one it never starts (concurrency 1); close() hands the second off.
    const a = await worker(prefix, 'A', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 1 }, { prefetch: 2, concurrency: 1 });
    const held = (await client.xadd(stream, '*', 'pattern', 'tasks', 'data', JSON.stringify({ kind: 'held' }))) as string;
    const queued = (await client.xadd(stream, '*', 'pattern', 'tasks', 'data', JSON.stringify({ n: 1 }))) as string;
    await waitFor(async () => (await pendingRows(client, stream, 'g', 'A')).length === 2 && handled.length === 1, 'A holds both, runs the held one');
    workers.untrack(a);
    // Released only once close() stopped A taking work (synchronously, in the call): the queued
    // entry cannot start after the held one ends, however late the close comes.
    const closing = a.app.close();
    tasks.heldReleased = true;
    await closing;
    expect(await pendingRows(client, stream, 'g')).toEqual([expect.objectContaining({ id: queued, consumer: 'handoff', deliveries: 1 })]);
    // A second handed-off entry whose last delivery did run before (count 2 = one run + the unstarted fetch).
    const ranOnce = (await pendingFor(stream, 'B', [{ n: 2 }]))[0]!;
    await deliverTimes(stream, 'B', [ranOnce], 2);
    await client.call('XCLAIM', stream, 'g', 'handoff', 0, ranOnce, 'IDLE', 1_000_000_000_000, 'JUSTID');

    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 1 });
    expect(await recovery.runOnce({ consumer: 'w1' })).toMatchObject({ claimed: 1, deadLettered: 1 });
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'nothing pending');
    expect(handled.map((h) => [h.id, h.consumer, h.deliveryCount])).toEqual([[held, 'A', 1], [queued, 'w1', 1]]);
    expect(w.events.deadLetters).toEqual([expect.objectContaining({ id: ranOnce, reason: 'max_deliveries', deliveryCount: 2, consumer: 'handoff' })]);
  });

  it('a dead-letter key of the wrong type: the move fails, the entry stays pending with its owner and count; fixed, it moves once', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const [poison] = (await pendingFor(stream, 'dead', [{ n: 1 }])) as [string];
    await deliverTimes(stream, 'dead', [poison], 2);
    await client.set(`{${stream}}:dead`, 'not a stream');
    await sleep(MIN_IDLE + 50);
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 2 });
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick).toMatchObject({ deadLettered: 0, errors: 1 });
    expect(w.events.errors[0]?.message).toMatch(/WRONGTYPE/);
    expect(await pendingRows(client, stream, 'g')).toEqual([expect.objectContaining({ id: poison, consumer: 'dead', deliveries: 2 })]);
    expect(handled).toEqual([]);
    await client.del(`{${stream}}:dead`);
    expect((await recovery.runOnce({ consumer: 'w1' })).deadLettered).toBe(1);
    expect(await client.xlen(`{${stream}}:dead`)).toBe(1);
    expect(await pendingRows(client, stream, 'g')).toEqual([]);
  });

  it('a poison entry too large for the dead-letter script does not hold up the others: they are moved and reported, it is reported once', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const ids = await pendingFor(stream, 'dead', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const big = (await client.xadd(stream, '*', 'pattern', 'tasks', ...Array.from({ length: 4_100 }, (_, i) => [`f${i}`, 'x']).flat())) as string;
    await client.call('XREADGROUP', 'GROUP', 'g', 'dead', 'STREAMS', stream, '>');
    const [first, , third] = ids as [string, string, string];
    // Poison in id order: first, big (between), third; the second one is fine.
    await deliverTimes(stream, 'dead', [first, third, big], 2);
    await sleep(MIN_IDLE + 50);
    const letters: DeadLetterNotice[] = [];
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 2, onDeadLetter: (letter) => void letters.push(letter) });
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick).toMatchObject({ deadLettered: 2, claimed: 1 });
    expect(letters.map((l) => l.id)).toEqual([first, third]);
    expect(w.events.deadLetters.map((l) => l.id)).toEqual([first, third]);
    expect(recovery.stats({ consumer: 'w1' })[0]!.stats.deadLettered).toBe(2);
    expect(w.events.errors.map((e) => e.message)).toEqual([expect.stringContaining(big)]);
    // The big one stays pending with its owner and count, never run; a second tick reports nothing new.
    await recovery.runOnce({ consumer: 'w1' });
    expect(w.events.errors).toHaveLength(1);
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 1, 'only the big entry pending');
    expect(await pendingRows(client, stream, 'g')).toEqual([expect.objectContaining({ id: big, consumer: 'dead', deliveries: 2 })]);
    expect(handled.map((h) => h.id)).toEqual([ids[1]]);
    expect(await client.xlen(`{${stream}}:dead`)).toBe(2);
  });

  it('several providers racing over one pending list take disjoint sets and write no duplicate dead letters', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const ids = await pendingFor(stream, 'dead', Array.from({ length: 200 }, (_, n) => ({ n })));
    const poison = ids.slice(0, 50);
    await deliverTimes(stream, 'dead', poison, 3);
    await sleep(MIN_IDLE + 50);
    const names = ['r1', 'r2', 'r3', 'r4'];
    for (const name of names) await worker(prefix, name, { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 3 }, { prefetch: 200, concurrency: 50 });
    const ticks = await Promise.all(names.map((consumer) => recovery.runOnce({ consumer })));
    expect(ticks.reduce((sum, t) => sum + t.deadLettered, 0)).toBe(50);
    expect(ticks.reduce((sum, t) => sum + t.claimed, 0)).toBe(150);
    await waitFor(() => handled.length >= 150, 'claimed entries handled');
    const ids150 = handled.map((h) => h.id);
    expect(new Set(ids150).size).toBe(150); // disjoint: no entry handled by two recoverers
    expect([...ids150].sort()).toEqual(ids.slice(50).sort());
    const dead = (await client.xrange(`{${stream}}:dead`, '-', '+')) as Array<[string, string[]]>;
    expect(dead.map(([id, flat]) => parseDeadLetter(id, flat)!.sourceId).sort()).toEqual([...poison].sort());
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'nothing pending');
  });

  it('pending entries deleted or trimmed are reported, acked away (tombstoned when due for dead-lettering), with no crash', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const ids = await pendingFor(stream, 'dead', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    const [gone1, gone2, poisonGone, kept] = ids as [string, string, string, string];
    await deliverTimes(stream, 'dead', [poisonGone], 3);
    await client.xdel(stream, gone1, gone2, poisonGone);
    await sleep(MIN_IDLE + 50);
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 3 });
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick).toMatchObject({ claimed: 1, deadLettered: 0, errors: 0 });
    // On 7.0+ XAUTOCLAIM names the deleted ids, so the tick finds all three. On 6.2 it claims them
    // into this consumer's PEL, and the worker's own handling of those claimed, bodiless entries may
    // ack and report gone1/gone2 before the tick's missing-id check: each is counted once per
    // process either way (the stats below), by whichever finder came first.
    expect(tick.deletedPending).toBeGreaterThanOrEqual(1);
    expect(tick.deletedPending).toBeLessThanOrEqual(3);
    // The worker's own finder reports after its XACK is answered, which may be after the tick returned.
    const lostIds = () => w.events.lost.filter((l) => l.reason === 'trimmed_pending').flatMap((l) => l.ids).sort();
    await waitFor(() => lostIds().length >= 3, 'the three deleted ids reported');
    expect(lostIds()).toEqual([gone1, gone2, poisonGone].sort());
    expect(w.events.deadLetters).toEqual([expect.objectContaining({ id: poisonGone, reason: 'trimmed', tombstone: true })]);
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'nothing pending');
    expect(handled.map((h) => h.id)).toEqual([kept]);
    expect(recovery.stats({ consumer: 'w1' })[0]!.stats.deletedPending).toBe(3);
  });

  it('an entry another worker claimed, handled and acked away with XACKDEL between the listing and the claim is not lost; one deleted while pending is', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const { xackdel } = await capabilitiesOf(client);
    const ids = await pendingFor(stream, 'dead', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const [raced, gone, kept] = ids as [string, string, string];
    await makeIdle(client, stream, 'g', 'dead', ids);
    await client.xdel(stream, gone); // deleted while pending: its PEL ref stays
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: 600_000 }, xackdel ? { workQueue: true } : {});
    // Between the tick's XPENDING (which lists all three) and its claim, another worker claims
    // `raced`, handles it and acks it away (XACKDEL; XACK + XDEL where Redis has no XACKDEL).
    const reserve = ServerRecoveryHost.prototype.reservePrefetchSlots;
    const interleaved = vi.spyOn(ServerRecoveryHost.prototype, 'reservePrefetchSlots').mockImplementationOnce(async function (this: ServerRecoveryHost, ...args) {
      await client.call('XCLAIM', stream, 'g', 'w2', 0, raced, 'JUSTID');
      if (xackdel) expect(await client.call('XACKDEL', stream, 'g', 'IDS', 1, raced)).toEqual([1]);
      else await client.multi().xack(stream, 'g', raced).xdel(stream, raced).exec();
      return reserve.apply(this, args);
    });
    try {
      const tick = await recovery.runOnce({ consumer: 'w1' });
      expect(interleaved).toHaveBeenCalled();
      expect(tick).toMatchObject({ claimed: 1, deletedPending: 1, errors: 0 });
    } finally {
      interleaved.mockRestore();
    }
    expect(w.events.lost).toEqual([{ stream, group: 'g', reason: 'trimmed_pending', count: 1, ids: [gone] }]);
    await waitFor(() => handled.length === 1, 'the claimed entry handled');
    expect(handled.map((h) => h.id)).toEqual([kept]);
    await waitFor(async () => (await pendingRows(client, stream, 'g')).length === 0, 'nothing pending');
    expect(recovery.stats({ consumer: 'w1' })[0]!.stats.deletedPending).toBe(1);
    expect(w.events.errors).toEqual([]);
  });

  it('reports a group whose unread entries were trimmed away (lag beyond the stream length), once', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: 60_000, trimCheckEvery: 1 }, { prefetch: 1, concurrency: 1 });
    await makeBusy(stream, 'w1');
    await pendingFor(stream, 'dead', [{}]);
    for (let i = 0; i < 60; i++) await client.xadd(stream, '*', 'pattern', 'tasks', 'data', '{}');
    await client.xtrim(stream, 'MAXLEN', 20);
    const first = await recovery.runOnce({ consumer: 'w1' });
    await recovery.runOnce({ consumer: 'w1' });
    const undelivered = w.events.lost.filter((l) => l.reason === 'trimmed_undelivered');
    // The group read 2 of 62 entries; MAXLEN 20 dropped 40 it never read. Redis 7.0+ counts them
    // (XINFO GROUPS `entries-read`); 6.2 cannot tell how many: the documented count is 0.
    const counted = (await capabilitiesOf(client)).lagTracking;
    expect(first.trimmedUndelivered).toBe(counted ? 40 : 0);
    expect(undelivered).toHaveLength(1);
    expect(undelivered[0]).toMatchObject({ stream, group: 'g', count: counted ? 40 : 0 });
    expect(recovery.stats({ consumer: 'w1' })[0]!.stats.trimmedUndelivered).toBe(counted ? 40 : 0);
  });

  it('consumer clean-up removes idle consumers holding nothing and the drained handoff consumer, never one with pending entries, nor itself', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    await pendingFor(stream, 'holder', [{}]);
    await client.xgroup('CREATECONSUMER', stream, 'g', 'gone');
    await client.xgroup('CREATECONSUMER', stream, 'g', 'handoff');
    await sleep(20);
    const w = await worker(prefix, 'w1', { enabled: false, minIdleTime: 60_000, reapConsumers: { minIdleTime: 10, every: 1 } });
    await sleep(20);
    const tick = await recovery.runOnce({ consumer: 'w1' });
    expect(tick.consumersReaped).toBe(2);
    const names = ((await client.call('XINFO', 'CONSUMERS', stream, 'g')) as unknown[][]).map((row) => String(row[1]));
    expect(names.sort()).toEqual(['holder', 'w1']);
    expect(w.events.errors).toEqual([]);
  });

  it('consumer clean-up racing with reads never drops a pending entry', async () => {
    const prefix = freshPrefix();
    const stream = `${prefix}tasks`;
    await worker(prefix, 'w1', { enabled: false, minIdleTime: 60_000, reapConsumers: { minIdleTime: 1, every: 1 } }, { prefetch: 1, concurrency: 1 });
    await makeBusy(stream, 'w1');
    // Racers read one entry each (they then hold it); the sweep runs concurrently all the time.
    let sweeping = true;
    const sweeps = (async () => {
      while (sweeping) await recovery.runOnce({ consumer: 'w1' });
    })();
    const racers = Array.from({ length: 100 }, (_, i) => `racer-${i}`);
    const ids: string[] = [];
    for (const racer of racers) {
      ids.push((await client.xadd(stream, '*', 'pattern', 'other', 'data', '{}')) as string);
      await client.xgroup('CREATECONSUMER', stream, 'g', racer);
      await sleep(2);
      await client.call('XREADGROUP', 'GROUP', 'g', racer, 'COUNT', 1, 'STREAMS', stream, '>');
    }
    sweeping = false;
    await sweeps;
    // w1 is busy (prefetch 1): every racer's entry must still be pending for that racer.
    const rows = (await pendingRows(client, stream, 'g')).filter((row) => row.consumer !== 'w1');
    expect(rows.map((row) => [row.id, row.consumer])).toEqual(ids.map((id, i) => [id, racers[i]]));
    expect(recovery.stats({ consumer: 'w1' })[0]!.stats.consumersReaped).toBeGreaterThan(0);
  });
});
