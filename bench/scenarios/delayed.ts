import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { nowNs, realtimeOffsetMs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { makePayload, makePayloadAt } from '../payload.js';
import { sendInFlight, sendPaced } from '../producers.js';
import { delayedEmitter, streamsEmitter } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

/** Delayed emits (docs/scheduling.md): promotion rate, lateness after the due time, Redis memory per held entry. */

const PROMOTE_KEY = 'bench:delayed-promote';
/** Where the held entries of delayed-promote wait between runs (COPY'd to the stream's keys before each). */
const TEMPLATE = delayedKeys('bench:delayed-promote-template');
/** delayed-latency: every emit is due this long after it is sent. */
const DELAY_MS = 200;

/**
 * Promotion rate: N entries held through the client, all due (their `deliverAt` a minute ago),
 * before a fresh worker process starts; entries/s from the start call until the stream holds all
 * N (XLEN, polled every 2 ms). The worker also consumes them (no-op handler): `handledPerSec` is
 * until its handler saw the last. `raw-promote-lua` is the raw worker calling the transport's
 * promote.lua: raw → it is what the script costs, it → ours what the server adds. The holds are written once (not timed) and copied back before
 * every run, byte for byte.
 */
export const delayedPromoteScenario: Scenario = {
  id: 'delayed-promote',
  title: 'delayed entries, all due, promoted by one worker',
  reference: 'raw',
  // Every run is a fresh worker on a fresh copy of the holds: no warm-up (it would cost ~10 s).
  runs: (config) => (config.quick ? { warmups: 0, runs: 1 } : { warmups: 0, runs: 3 }),
  setup: async (ctx) => {
    const started = Date.now();
    const total = ctx.config.delayedEntries;
    const emitter = delayedEmitter(ctx.server.url);
    await emitter.open();
    try {
      const dueAt = Date.now() - 60_000;
      await sendInFlight(total, ctx.config.inFlight, () => emitter.emitAt(PROMOTE_KEY, makePayload(), dueAt));
    } finally {
      await emitter.close();
    }
    const { schedule, bodies } = delayedKeys(PROMOTE_KEY);
    const held = await ctx.admin.zcard(schedule);
    if (held !== total) throw new Error(`${held} of ${total} entries held`);
    await ctx.admin.rename(schedule, TEMPLATE.schedule);
    await ctx.admin.rename(bodies, TEMPLATE.bodies);
    await ctx.admin.del(PROMOTE_KEY);
    ctx.log(`  delayed-promote: ${total} entries held in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  },
  teardown: async (ctx) => {
    await ctx.admin.del(TEMPLATE.schedule, TEMPLATE.bodies);
  },
  contenders: (ctx) => [
    promoteContender(ctx, 'raw', 'raw promotion loop (inline Lua, batch 100) + raw XREADGROUP/XACK loop', 'delayed-raw-worker'),
    promoteContender(ctx, 'raw-promote-lua', 'the same loop calling promote.lua (promoteDue, batch 100)', 'delayed-raw-worker', { script: 'promote.lua' }),
    promoteContender(ctx, 'streams', 'RedisStreamsServer, delayed promotion defaults (batch 100, maxPages 10)', 'streams-worker'),
  ],
};

function promoteContender(ctx: BenchContext, impl: string, label: string, script: string, options?: Record<string, string>): Contender {
  return {
    impl,
    label,
    run: async (): Promise<RunResult> => {
      const total = ctx.config.delayedEntries;
      const { schedule, bodies } = delayedKeys(PROMOTE_KEY);
      await ctx.admin.del(PROMOTE_KEY, schedule, bodies);
      await ctx.admin.copy(TEMPLATE.schedule, schedule);
      await ctx.admin.copy(TEMPLATE.bodies, bodies);
      const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key: PROMOTE_KEY, group: 'bench', recordLatency: false, ...(options ? { options } : {}) });
      try {
        const before = await worker.stats();
        const handled = worker.waitFor(total, 120_000);
        const startedAt = await worker.go();
        const promotedAt = await waitForLength(ctx, PROMOTE_KEY, total, 120_000);
        const handledAt = await handled;
        const after = await worker.stats();
        const [left, bodiesLeft, length] = await Promise.all([ctx.admin.zcard(schedule), ctx.admin.hlen(bodies), ctx.admin.xlen(PROMOTE_KEY)]);
        if (left !== 0 || bodiesLeft !== 0 || length !== total) {
          throw new Error(`after the run: ${left} held, ${bodiesLeft} bodies, ${length} in the stream (expected 0, 0, ${total})`);
        }
        return {
          msgsPerSec: total / ((promotedAt - startedAt) / 1e9),
          extra: {
            handledPerSec: total / ((Math.max(handledAt, promotedAt) - startedAt) / 1e9),
            workerCpuMs: after.cpuMs - before.cpuMs,
          },
        };
      } finally {
        await worker.stop();
        await ctx.admin.del(PROMOTE_KEY, schedule, bodies);
      }
    },
  };
}

/** Resolves with the clock reading at which the stream holds `length` entries. */
async function waitForLength(ctx: BenchContext, key: string, length: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await ctx.admin.xlen(key);
    if (now >= length) return nowNs();
    if (Date.now() > deadline) throw new Error(`${now} of ${length} entries in ${key} after ${timeoutMs} ms`);
    await sleep(2);
  }
}

/**
 * Lateness after the due time: delayed emits at `lightLoadRate` a second for `delayedSeconds`,
 * each due 200 ms after it is sent (`deliverAt`: Unix ms, which Redis compares with its TIME),
 * one worker consuming; p50/p99 of handler time minus due time. The payload carries the due time
 * on the shared monotonic clock (clock.ts: the offset to Unix time is measured once per run), so
 * the worker's probe records exactly that difference. The first second of emits is left out: a
 * worker that has nothing held looks again only after `delayed.interval` (1 s), so the first
 * entries can be up to that late (`preRollMaxMs`).
 */
export const delayedLatencyScenario: Scenario = {
  id: 'delayed-latency',
  title: `delayed emits, ${DELAY_MS} ms delay, 1000/s paced: handler time − due time`,
  reference: 'streams',
  runs: (config) => (config.quick ? { warmups: 0, runs: 1 } : { warmups: 0, runs: 3 }),
  contenders: (ctx) => {
    const emitter = delayedEmitter(ctx.server.url);
    return [
      {
        impl: 'streams',
        label: 'RedisStreamsClient deliverAt → RedisStreamsServer (delayed defaults)',
        setup: () => emitter.open(),
        run: async (round): Promise<RunResult> => {
          const key = `bench:delayed-latency:${round}`;
          const worker = await WorkerProcess.spawn('streams-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: true });
          try {
            await worker.go();
            const offsetMs = realtimeOffsetMs();
            // The longest pause between two emits: one over DELAY_MS (a stalled bench process) lets the
            // schedule run empty, and the entries held next wait up to `delayed.interval`.
            let lastSendNs = 0;
            let maxGapNs = 0;
            const sendOne = () => {
              const now = nowNs();
              if (lastSendNs > 0) maxGapNs = Math.max(maxGapNs, now - lastSendNs);
              lastSendNs = now;
              const dueMs = Math.ceil(now / 1e6 + offsetMs) + DELAY_MS;
              return emitter.emitAt(key, makePayloadAt((dueMs - offsetMs) * 1e6), dueMs);
            };
            const rate = ctx.config.lightLoadRate;
            const seconds = ctx.config.delayedSeconds;
            // One paced stream of emits; what the handler saw before the pre-roll's last entry is
            // drained and left out. A gap between them would empty the schedule, and the next
            // entries would wait for the worker's `interval`.
            const preRoll = Math.round(rate * 1);
            const sent = Math.round(rate * (1 + seconds));
            const reached = worker.waitFor(preRoll, 60_000);
            const sending = sendPaced(rate, 1 + seconds, sendOne);
            await reached;
            const pre = await worker.stats(); // drains the recorder: the measured part starts here
            maxGapNs = 0;
            const done = worker.waitFor(sent, 60_000);
            await sending;
            await done;
            const { latency } = await worker.stats();
            const held = await ctx.admin.zcard(delayedKeys(key).schedule);
            if (pre.latency.count + latency.count !== sent || held !== 0) throw new Error(`${pre.latency.count + latency.count} of ${sent} entries handled, ${held} still held`);
            return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, extra: { maxMs: latency.maxMs, messages: latency.count, preRollMaxMs: pre.latency.maxMs, producerMaxGapMs: maxGapNs / 1e6 } };
          } finally {
            await worker.stop();
            const { schedule, bodies } = delayedKeys(key);
            await ctx.admin.del(key, schedule, bodies);
          }
        },
        teardown: () => emitter.close(),
      },
    ];
  },
};

/**
 * Redis memory per held entry: N emits of the 100-byte payload held (due in a day, nobody
 * promotes), `MEMORY USAGE … SAMPLES 0` (every element counted) of the schedule and the bodies
 * hash over N; `usedMemoryPerEntry` is `used_memory` after minus before, over N. The reference is
 * the same N emits without a delay, in the stream (`MEMORY USAGE` of the stream over N).
 */
export const delayedMemoryScenario: Scenario = {
  id: 'delayed-memory',
  title: 'Redis memory per held entry (100-byte payload)',
  reference: 'in-stream',
  runs: () => ({ warmups: 0, runs: 1 }),
  contenders: (ctx) => {
    const total = ctx.config.delayedMemoryEntries;
    const plain = streamsEmitter(ctx.server.url);
    const delayed = delayedEmitter(ctx.server.url);
    return [
      {
        impl: 'in-stream',
        label: 'the same emits without a delay, in the stream',
        setup: () => plain.open(),
        run: async (round) => {
          const key = `bench:delayed-memory:stream:${round}`;
          const usedBefore = await usedMemory(ctx);
          await sendInFlight(total, ctx.config.inFlight, () => plain.emit(key));
          const usedAfter = await usedMemory(ctx);
          const bytes = Number(await ctx.admin.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
          await ctx.admin.del(key);
          return { bytesPerEntry: bytes / total, extra: { usedMemoryPerEntry: (usedAfter - usedBefore) / total } };
        },
        teardown: () => plain.close(),
      },
      {
        impl: 'streams',
        label: 'RedisStreamsClient deliverAt: held (schedule + bodies)',
        setup: () => delayed.open(),
        run: async (round) => {
          const key = `bench:delayed-memory:held:${round}`;
          const { schedule, bodies } = delayedKeys(key);
          const usedBefore = await usedMemory(ctx);
          const dueAt = Date.now() + 86_400_000;
          await sendInFlight(total, ctx.config.inFlight, () => delayed.emitAt(key, makePayload(), dueAt));
          const usedAfter = await usedMemory(ctx);
          const [scheduleBytes, bodiesBytes] = await Promise.all(
            [schedule, bodies].map(async (name) => Number(await ctx.admin.call('MEMORY', 'USAGE', name, 'SAMPLES', '0'))),
          );
          const held = await ctx.admin.zcard(schedule);
          await ctx.admin.del(schedule, bodies);
          if (held !== total) throw new Error(`${held} of ${total} entries held`);
          return {
            bytesPerEntry: ((scheduleBytes as number) + (bodiesBytes as number)) / total,
            extra: { scheduleBytesPerEntry: (scheduleBytes as number) / total, bodiesBytesPerEntry: (bodiesBytes as number) / total, usedMemoryPerEntry: (usedAfter - usedBefore) / total },
          };
        },
        teardown: () => delayed.close(),
      },
    ];
  },
};

async function usedMemory(ctx: BenchContext): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await ctx.admin.info('memory'))?.[1] ?? Number.NaN);
}
