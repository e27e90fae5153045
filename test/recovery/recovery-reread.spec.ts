import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeadLetterNotice, EntriesLostNotice } from '../../src/recovery/recovery-events.js';
import { RecoveryScheduler } from '../../src/recovery/recovery-scheduler.js';
import { recoveryScripts } from '../../src/recovery/scripts/loader.js';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * A restart under the same consumer name re-reads its own pending list (paged, waiting for free
 * prefetch slots) while recovery ticks run: the two must not dead-letter, report or count one
 * entry twice.
 */

const MIN_IDLE = 300;
const started: Array<{ n: number; id: string; deliveryCount: number }> = [];
const gates = new Map<number, () => void>();
const gated = new Map<number, Promise<void>>();

function gateOf(n: number): Promise<void> {
  let promise = gated.get(n);
  if (promise === undefined) {
    promise = new Promise<void>((resolve) => gates.set(n, resolve));
    gated.set(n, promise);
  }
  return promise;
}

function open(n: number): void {
  void gateOf(n);
  gates.get(n)?.();
}

@Controller()
class JobsController {
  @EventPattern<string>('jobs')
  async onJob(@Payload() data: { n: number; hold?: boolean }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    started.push({ n: data.n, id: ctx.getId(), deliveryCount: ctx.getDeliveryCount() });
    if (data.hold) await gateOf(data.n);
  }

  /** Another group: its reader blocks on an empty stream holding a prefetch slot (recovery's claim interrupts it). */
  @EventPattern<string>('quiet', { group: 'h' })
  onQuiet(): void {}
}

describe('restart re-read and recovery of the same consumer', () => {
  const redis = useRedisServer();
  const recovery = new RedisStreamsRecovery();
  let running: RunningServer | undefined;
  let counter = 0;

  afterEach(async () => {
    vi.restoreAllMocks();
    for (const release of gates.values()) release();
    await running?.app.close();
    running = undefined;
    started.length = 0;
    gates.clear();
    gated.clear();
  });

  interface Events {
    deadLetters: DeadLetterNotice[];
    lost: EntriesLostNotice[];
    errors: Error[];
  }

  async function restart(prefix: string, extra: Record<string, unknown>): Promise<Events> {
    const events: Events = { deadLetters: [], lost: [], errors: [] };
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'w', prefix, shutdownTimeout: 2_000, ...extra },
      [JobsController],
      [],
      (server) => {
        const on = server.on.bind(server) as (event: string, listener: (payload: never) => void) => void;
        on('deadLetter', (notice: DeadLetterNotice) => events.deadLetters.push(notice));
        on('entriesLost', (notice: EntriesLostNotice) => events.lost.push(notice));
        on('error', (error: Error) => events.errors.push(error));
      },
    );
    return events;
  }

  /** XADDs jobs and reads them as `owner` (pending for it, delivery count 1). */
  async function pendingJobs(stream: string, owner: string, jobs: Array<{ n: number; hold?: boolean }>): Promise<string[]> {
    await redis.client.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM').catch(() => undefined);
    const ids: string[] = [];
    for (const job of jobs) ids.push((await redis.client.xadd(stream, '*', 'pattern', 'jobs', 'data', JSON.stringify(job))) as string);
    await redis.client.call('XREADGROUP', 'GROUP', 'g', owner, 'COUNT', jobs.length, 'STREAMS', stream, '>');
    return ids;
  }

  /** Whether the reader of group `h` is blocked in XREADGROUP (it then holds a prefetch slot). */
  async function quietReaderBlocked(): Promise<boolean> {
    const list = (await redis.client.client('LIST')) as string;
    const line = list.split('\n').find((l) => l.includes('name=nestjs-redis-streams:server-reader:h '));
    return /flags=\S*b/.test(line ?? '');
  }

  /**
   * prefetch 3, readBatch 1: the re-read runs the two held entries (one page each) while the
   * blocked reader of group `h` holds the third slot; the re-read then waits for a slot.
   */
  const stalled = { prefetch: 3, concurrency: 3, readBatch: 1, blockMs: 10_000 };

  async function waitUntilReReadStalls(): Promise<void> {
    await waitFor(() => started.length === 2, 'the two held entries started');
    await waitFor(quietReaderBlocked, 'the reader of group h blocked');
    expect(running!.server.recoveryHost().freePrefetchSlots()).toBe(0);
  }

  it('an entry recovery claimed while the re-read waited for slots is not dead-lettered when the re-read reaches it', async () => {
    const prefix = `r${++counter}:`;
    const stream = `${prefix}jobs`;
    const [first, second, tired] = (await pendingJobs(stream, 'w', [{ n: 1, hold: true }, { n: 2, hold: true }, { n: 3, hold: true }])) as [string, string, string];
    for (let i = 1; i < 4; i++) await redis.client.call('XCLAIM', stream, 'g', 'w', 0, tired); // delivered 4 times
    await sleep(MIN_IDLE + 50);

    const events = await restart(prefix, { ...stalled, recovery: { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 5 } });
    await waitUntilReReadStalls();
    // The tick takes the idle, not yet re-read entry (delivery 5, the last allowed) and runs it.
    expect(await recovery.runOnce({ consumer: 'w' })).toMatchObject({ claimed: 1, deadLettered: 0 });
    await waitFor(() => started.some((s) => s.id === tired), 'the recovered entry runs');
    // A slot comes back: the re-read goes on and reads that entry again (delivery 6) while it runs.
    open(1);
    await waitFor(async () => (await pendingRows(redis.client, stream, 'g')).every((row) => row.id !== first), 'the first entry acked');
    await waitFor(async () => {
      const row = (await pendingRows(redis.client, stream, 'g')).find((r) => r.id === tired);
      return row === undefined || row.deliveries === 6 || events.deadLetters.length > 0;
    }, 'the re-read reached it');
    expect(events.deadLetters).toEqual([]);
    open(2);
    open(3);
    await waitFor(async () => (await pendingRows(redis.client, stream, 'g')).length === 0, 'everything acked');
    expect(events.deadLetters).toEqual([]);
    expect(await redis.client.exists(`{${stream}}:dead`)).toBe(0);
    expect(started.map((s) => [s.id, s.deliveryCount])).toEqual([[first, 2], [second, 2], [tired, 5]]);
    expect(events.errors).toEqual([]);
  });

  it('an entry a tick claimed before the re-read raised its count, not yet handed to a handler, is run, not dead-lettered', async () => {
    const prefix = `r${++counter}:`;
    const stream = `${prefix}jobs`;
    const [first, second, tired] = (await pendingJobs(stream, 'w', [{ n: 1, hold: true }, { n: 2, hold: true }, { n: 3 }])) as [string, string, string];
    for (let i = 1; i < 4; i++) await redis.client.call('XCLAIM', stream, 'g', 'w', 0, tired); // delivered 4 times
    await sleep(MIN_IDLE + 50);

    const events = await restart(prefix, { ...stalled, recovery: { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 5 } });
    await waitUntilReReadStalls();
    // The tick's claim (claim-idle script) runs in Redis (delivery 5, the last allowed) but its
    // reply is processed late, as when the re-read's replies overtake it: the entry is claimed,
    // not yet handed on.
    const scripts = recoveryScripts(running!.server.commandConnection());
    const claimIdle = scripts.nrsClaimIdleBuffer.bind(scripts);
    let answerClaim: () => void = () => undefined;
    const claimAnswered = new Promise<void>((resolve) => (answerClaim = resolve));
    vi.spyOn(scripts, 'nrsClaimIdleBuffer').mockImplementation(async (...args) => {
      const reply = await claimIdle(...args);
      await claimAnswered;
      return reply;
    });
    const handedToDeadLetters = vi.spyOn(RecoveryScheduler.prototype, 'deadLetterExhausted');
    const tick = recovery.runOnce({ consumer: 'w' });
    await waitFor(async () => (await pendingRows(redis.client, stream, 'g')).find((r) => r.id === tired)?.deliveries === 5, 'claimed in Redis');
    // A slot comes back: the re-read goes on and reads the entry again (delivery 6, past the limit).
    open(1);
    await waitFor(() => handedToDeadLetters.mock.calls.length > 0, 'the re-read found it exhausted');
    answerClaim();
    expect(await tick).toMatchObject({ claimed: 1, deadLettered: 0 });
    open(2);
    await waitFor(async () => (await pendingRows(redis.client, stream, 'g')).length === 0, 'everything acked');
    expect(events.deadLetters).toEqual([]);
    expect(await redis.client.exists(`{${stream}}:dead`)).toBe(0);
    expect(started.map((s) => [s.id, s.deliveryCount])).toEqual([[first, 2], [second, 2], [tired, 5]]);
    expect(events.errors).toEqual([]);
  });

  it('a pending entry deleted from the stream is reported lost and acked once when recovery and the re-read both find it', async () => {
    const prefix = `r${++counter}:`;
    const stream = `${prefix}jobs`;
    const [first, second] = (await pendingJobs(stream, 'w', [{ n: 1, hold: true }, { n: 2, hold: true }])) as [string, string];
    const [gone] = (await pendingJobs(stream, 'dead', [{ n: 3 }])) as [string];
    await redis.client.xdel(stream, gone);
    await sleep(MIN_IDLE + 50);

    const events = await restart(prefix, { ...stalled, recovery: { enabled: false, minIdleTime: MIN_IDLE } });
    await waitUntilReReadStalls();
    // Redis 6.2's XCLAIM moves the deleted entry into w's pending list (7.0+ drops it): the
    // re-read, woken as the claim gives its slot back, finds it there too.
    await recovery.runOnce({ consumer: 'w' });
    open(1);
    open(2);
    await waitFor(async () => (await pendingRows(redis.client, stream, 'g')).length === 0, 'everything acked');
    const lostIds = events.lost.filter((l) => l.reason === 'trimmed_pending').flatMap((l) => l.ids);
    expect(lostIds).toEqual([gone]);
    expect(recovery.stats({ consumer: 'w' })[0]!.stats.deletedPending).toBe(1);
    expect(started.map((s) => s.id)).toEqual([first, second]);
    expect(events.errors).toEqual([]);
  });

  it('stats() count what the re-read does: a dead letter past maxDeliveries and a deleted entry', async () => {
    const prefix = `r${++counter}:`;
    const stream = `${prefix}jobs`;
    const [gone, tired] = (await pendingJobs(stream, 'w', [{ n: 1 }, { n: 2 }])) as [string, string];
    await redis.client.call('XCLAIM', stream, 'g', 'w', 0, tired); // delivered twice: the re-read makes it 3
    await redis.client.xdel(stream, gone);

    const events = await restart(prefix, { recovery: { enabled: false, minIdleTime: MIN_IDLE, maxDeliveries: 2 } });
    await waitFor(() => events.deadLetters.length === 1 && events.lost.length === 1, 'dead letter and loss reported');
    expect(events.deadLetters[0]).toMatchObject({ id: tired, reason: 'max_deliveries', deliveryCount: 3 });
    expect(events.lost[0]).toMatchObject({ reason: 'trimmed_pending', ids: [gone] });
    expect(recovery.stats({ consumer: 'w' })[0]!.stats).toMatchObject({ deadLettered: 1, deletedPending: 1 });
    expect(await pendingRows(redis.client, stream, 'g')).toEqual([]);
    expect(started).toEqual([]);
  });
});
