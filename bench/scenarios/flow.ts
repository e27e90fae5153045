import { Redis } from 'ioredis';
import { nowNs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { fillStream, rawXadd, sendPacedUntil } from '../producers.js';
import { percentileSorted } from '../stats.js';
import { WorkerProcess } from '../worker-process.js';
import { workerContender, type ConsumeRunVariant } from './consume.js';

/** Flow control across workers (issue 29 item 5): a shared rate limit, its cost when never hit, pause/resume. */

const RATE_MAX = 1000;
const RATE_PER_MS = 1000;
const RATE_WORKERS = 3;
/** Before the measured window: the first full bucket (RATE_MAX entries at once) is spent in it. */
const RATE_WARMUP_MS = 3000;

/**
 * A rate limit of 1000/s shared by 3 worker processes of one group, in front of a backlog: entries
 * handled per second over the measured window (after the warm-up), each worker's share, and the
 * slowest and fastest 1-s windows.
 */
export const flowRateScenario: Scenario = {
  id: 'flow-rate',
  title: `rate limit ${RATE_MAX}/s shared by ${RATE_WORKERS} worker processes, pre-filled backlog`,
  reference: 'streams',
  // One long window is the measurement; a repeat would double the scenario's time.
  runs: () => ({ warmups: 0, runs: 1 }),
  contenders: (ctx) => [
    {
      impl: 'streams',
      label: `RedisStreamsServer × ${RATE_WORKERS}, extras.rateLimit { max: ${RATE_MAX}, per: ${RATE_PER_MS} }`,
      run: (round) => rateRun(ctx, round),
    },
  ],
};

async function rateRun(ctx: BenchContext, round: number): Promise<RunResult> {
  const key = `bench:flow-rate:${round}`;
  const backlog = ctx.config.flowRateBacklog;
  await fillStream(ctx.admin, key, backlog);
  const workers = await Promise.all(
    Array.from({ length: RATE_WORKERS }, (_, i) =>
      WorkerProcess.spawn('streams-flow-worker', {
        redisUrl: ctx.server.url,
        key,
        group: 'bench',
        recordLatency: false,
        options: { rateLimitMax: RATE_MAX, rateLimitPer: RATE_PER_MS, consumer: `rate-${i + 1}` },
      }),
    ),
  );
  try {
    await Promise.all(workers.map((worker) => worker.go()));
    await sleep(RATE_WARMUP_MS);
    const snapshot = () => Promise.all(workers.map((worker) => worker.call('starts')));
    const first = await snapshot();
    // A snapshot each second: the rate over 1-s windows shows how evenly the bucket is shared out.
    const seconds: number[] = [];
    let previous = first;
    for (let s = 1; s <= ctx.config.flowRateSeconds; s++) {
      await sleep(Math.max(0, (first[0]!.at + s * 1e9 - nowNs()) / 1e6));
      const now = await snapshot();
      seconds.push(sum(now.map((n, i) => n.count! - previous[i]!.count!)) / (mean(now.map((n, i) => n.at! - previous[i]!.at!)) / 1e9));
      previous = now;
    }
    const last = previous;
    const handled = last.map((n, i) => n.count! - first[i]!.count!);
    const total = sum(handled);
    if (sum(last.map((n) => n.count!)) >= backlog) throw new Error(`the backlog of ${backlog} ran out: the rate is the backlog's, not the limit's`);
    const windowS = mean(last.map((n, i) => n.at! - first[i]!.at!)) / 1e9;
    const rate = total / windowS;
    const shares = handled.map((count) => count / total);
    const warmup = sum(first.map((n) => n.count!));
    ctx.log(
      `  flow-rate: ${rate.toFixed(1)}/s over ${windowS.toFixed(1)} s (${(((rate - RATE_MAX) / RATE_MAX) * 100).toFixed(2)} % from ${RATE_MAX}/s); ` +
        `shares ${shares.map((share) => `${(share * 100).toFixed(1)} %`).join(' / ')}; 1-s windows ${Math.round(Math.min(...seconds))}–${Math.round(Math.max(...seconds))}/s; ` +
        `warm-up ${RATE_WARMUP_MS / 1000} s: ${warmup} entries (a full bucket of ${RATE_MAX} + ${(RATE_WARMUP_MS / 1000) * RATE_MAX} at the rate)`,
    );
    return {
      msgsPerSec: rate,
      extra: {
        deviationPct: ((rate - RATE_MAX) / RATE_MAX) * 100,
        windowS,
        handled: total,
        warmupEntries: warmup,
        minSecondRate: Math.min(...seconds),
        maxSecondRate: Math.max(...seconds),
        ...Object.fromEntries(shares.map((share, i) => [`share${i + 1}`, share])),
      },
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await ctx.admin.del(key);
  }
}

/** Limits no read ever meets: what the limiter costs per entry when it grants everything. */
const NEVER_HIT = { rateLimitMax: 10_000_000, rateLimitPer: 1000 };

/**
 * The consume run (pre-filled stream, fresh worker, time to the last entry) with the limits on but
 * never hit, next to the same server without them, the raw loop, and the floor of any Redis-side
 * limiter: the raw loop plus one call of the same token-bucket script per read.
 */
export const flowCostScenario: Scenario = {
  id: 'flow-cost',
  title: 'consume only, pre-filled stream, flow limits never hit',
  reference: 'raw',
  runs: (config) => (config.quick ? { warmups: 1, runs: 1 } : { warmups: 1, runs: 3 }),
  contenders: (ctx) => {
    // XACK leaves the entries: the check that every run read its own stream to the end.
    const variant = (options: ConsumeRunVariant['options']): ConsumeRunVariant => ({ scenario: 'flow-cost', options, expectedLeft: (total) => total });
    return [
      workerContender(ctx, 'raw', 'raw XREADGROUP COUNT 100 + XACK loop', 'raw-worker', variant({})),
      workerContender(ctx, 'raw-rate-floor', 'raw loop + one rate-limit.lua EVALSHA per read (the floor)', 'raw-rate-floor-worker', variant(NEVER_HIT)),
      workerContender(ctx, 'streams', 'RedisStreamsServer, no limit', 'streams-flow-worker', variant({})),
      workerContender(ctx, 'streams-rate', 'RedisStreamsServer, rateLimit { max: 10_000_000, per: 1000 }', 'streams-flow-worker', variant(NEVER_HIT)),
      workerContender(ctx, 'streams-concurrency', 'RedisStreamsServer, globalConcurrency 1_000_000', 'streams-flow-worker', variant({ globalConcurrency: 1_000_000 })),
    ] satisfies Contender[];
  },
};

const PAUSE_BLOCK_MS = 1000;
/** The server's pause poll: half blockMs, at least 50 ms, at most 1 s (src/server/server-flow.ts). */
const PAUSE_POLL_MS = Math.min(1000, Math.max(50, Math.floor(PAUSE_BLOCK_MS / 2)));
const PAUSE_HANDLER_MS = 10;
const PAUSE_LOAD_PER_S = 1000;
/** After a resume, before the next pause: the backlog of the pause drains (the worker handles ~5000/s). */
const PAUSE_SETTLE_MS = 600;
/** How long after a pause handler starts are looked for: past the documented bound, with room. */
const PAUSE_OBSERVE_MS = PAUSE_POLL_MS + PAUSE_HANDLER_MS + 300;

/**
 * One worker under a steady 1000 emits/s, handler 10 ms, blockMs 1000: per cycle, the time from
 * the pause call to the last handler start, then from the resume call to the first handler start.
 * `self`: the worker's own server pauses (it reads the state again at once); `other`: another
 * worker process pauses (this one sees it at its next poll, half blockMs).
 */
export const flowPauseScenario: Scenario = {
  id: 'flow-pause',
  title: `pause/resume under ${PAUSE_LOAD_PER_S} emits/s, handler ${PAUSE_HANDLER_MS} ms, blockMs ${PAUSE_BLOCK_MS}: pause call → last handler start`,
  reference: 'self',
  // The cycles are the samples: one run of each.
  runs: () => ({ warmups: 0, runs: 1 }),
  contenders: (ctx) => [
    { impl: 'self', label: "server.pause() on the worker's own server", run: (round) => pauseRun(ctx, 'self', round) },
    { impl: 'other', label: 'server.pause() on another worker process', run: (round) => pauseRun(ctx, 'other', round) },
  ],
};

async function pauseRun(ctx: BenchContext, impl: 'self' | 'other', round: number): Promise<RunResult> {
  const key = `bench:flow-pause:${impl}:${round}`;
  const config = { redisUrl: ctx.server.url, group: 'bench', recordLatency: false };
  const worker = await WorkerProcess.spawn('streams-flow-worker', { ...config, key, options: { delayMs: PAUSE_HANDLER_MS, trackStarts: true, blockMs: PAUSE_BLOCK_MS } });
  // The other worker listens on a stream of its own and pauses the group of `key` by name.
  const pauser = impl === 'self' ? worker : await WorkerProcess.spawn('streams-flow-worker', { ...config, key: `${key}:control`, options: { blockMs: PAUSE_BLOCK_MS } });
  const producer = new Redis(ctx.server.url, { enableAutoPipelining: true });
  const load = new AbortController();
  let sending: Promise<number> | undefined;
  try {
    await worker.go();
    if (pauser !== worker) await pauser.go();
    sending = sendPacedUntil(PAUSE_LOAD_PER_S, load.signal, rawXadd(producer, key, ctx.config.maxLen));
    await sleep(1000);
    const pauses: number[] = [];
    const resumes: number[] = [];
    /** The worker's longest event-loop delay in each cycle's pause window. */
    const lags: number[] = [];
    let late = 0;
    for (let cycle = 0; cycle < ctx.config.flowPauseCycles; cycle++) {
      // A random phase against the worker's poll timer.
      await sleep(PAUSE_SETTLE_MS + Math.random() * PAUSE_POLL_MS);
      await worker.call('lag');
      const paused = await pauser.call('pause', key);
      await sleep(PAUSE_OBSERVE_MS);
      const seen = await worker.call('starts');
      pauses.push(Math.max(0, seen.lastStartAt! - paused.at!) / 1e6);
      lags.push((await worker.call('lag')).maxMs!);
      const mark = await worker.call('mark');
      // A handler started after the observed window: the pause took longer than the window.
      if (mark.lastStartAt !== seen.lastStartAt) late++;
      const resumed = await pauser.call('resume', key);
      let first = 0;
      const deadline = Date.now() + 10_000;
      while (first === 0) {
        if (Date.now() > deadline) throw new Error(`no handler started within 10 s of resume (cycle ${cycle + 1})`);
        await sleep(2);
        first = (await worker.call('starts')).firstAfterMark!;
      }
      resumes.push((first - resumed.at!) / 1e6);
    }
    load.abort();
    const emitted = await sending;
    const slowest = pauses.indexOf(Math.max(...pauses));
    const slowestLagMs = lags[slowest]!;
    const medianLagMs = percentileSorted([...lags].sort((a, b) => a - b), 50);
    pauses.sort((a, b) => a - b);
    resumes.sort((a, b) => a - b);
    const boundMs = (impl === 'self' ? 0 : PAUSE_POLL_MS) + PAUSE_HANDLER_MS;
    ctx.log(
      `  flow-pause ${impl}: pause → last handler start p50 ${percentileSorted(pauses, 50).toFixed(1)} / p90 ${percentileSorted(pauses, 90).toFixed(1)} / p99 ${percentileSorted(pauses, 99).toFixed(1)} ms ` +
        `(documented bound ${boundMs} ms${impl === 'other' ? `: poll ${PAUSE_POLL_MS} + handler ${PAUSE_HANDLER_MS}` : ': handler'}); ` +
        `resume → first handler start p50 ${percentileSorted(resumes, 50).toFixed(1)} / p99 ${percentileSorted(resumes, 99).toFixed(1)} ms; ${pauses.length} cycles, ${late} late; ` +
        `the worker's event loop stalled up to ${slowestLagMs.toFixed(0)} ms in the slowest cycle (median cycle ${medianLagMs.toFixed(0)} ms)`,
    );
    return {
      p50Ms: percentileSorted(pauses, 50),
      p99Ms: percentileSorted(pauses, 99),
      extra: {
        // With 20 cycles p99 is the slowest one; p90 says whether it stood alone.
        pauseP90Ms: percentileSorted(pauses, 90),
        pauseMaxMs: pauses.at(-1)!,
        resumeP50Ms: percentileSorted(resumes, 50),
        resumeP99Ms: percentileSorted(resumes, 99),
        resumeMaxMs: resumes.at(-1)!,
        slowestCycleLoopDelayMs: slowestLagMs,
        medianCycleLoopDelayMs: medianLagMs,
        cycles: pauses.length,
        lateStarts: late,
        boundMs,
        blockMs: PAUSE_BLOCK_MS,
        emitted,
      },
    };
  } finally {
    load.abort();
    await sending?.catch(() => undefined);
    await producer.quit();
    if (pauser !== worker) await pauser.stop();
    await worker.stop();
    await ctx.admin.del(key, `${key}:control`);
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function mean(values: readonly number[]): number {
  return sum(values) / values.length;
}
