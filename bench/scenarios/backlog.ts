import { nowNs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { fillStream } from '../producers.js';
import { streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

const KEY = 'bench:backlog';

/**
 * A worker facing a backlog of 1M entries: its peak RSS (VmHWM) over a fixed time of consuming.
 * Prefetch must bound it: a worker that read ahead without limit would grow with the backlog.
 * Each run uses a new group (from 0), so the same backlog serves every run.
 */
export const backlogScenario: Scenario = {
  id: 'backlog',
  title: 'worker facing a 1M-entry backlog, peak RSS',
  reference: 'raw',
  runs: (config) => ({ warmups: 0, runs: config.quick ? 1 : 2 }),
  setup: async (ctx) => {
    const started = Date.now();
    await ctx.admin.del(KEY);
    await fillStream(ctx.admin, KEY, ctx.config.backlogEntries, 10_000);
    ctx.log(`  backlog: ${ctx.config.backlogEntries} entries written in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  },
  teardown: async (ctx) => {
    await ctx.admin.del(KEY);
  },
  contenders: (ctx) => [
    contender(ctx, 'raw', 'raw XREADGROUP COUNT 100 + XACK loop', 'raw-worker'),
    // Nest's application and per-entry pipeline without our transport: what any Nest transport starts from.
    contender(ctx, 'raw-nest-handler', 'raw XREADGROUP/XACK loop → Nest @EventPattern pipeline', 'nest-raw-loop-worker'),
    {
      ...contender(ctx, 'streams', 'RedisStreamsServer (default prefetch)', 'streams-worker'),
      ...(streamsPieces.server ? {} : { unavailable: 'RedisStreamsServer has not landed yet' }),
    },
    // Without the lease thread's isolate and connection (docs/benchmarks.md, "Lease thread"): what our read/handle/ack path holds.
    contender(ctx, 'streams-leases-off', 'RedisStreamsServer (default prefetch), recovery.leases: false', 'streams-worker', { leases: false }),
  ],
};

function contender(ctx: BenchContext, impl: string, label: string, script: string, options?: Record<string, boolean>): Contender {
  return {
    impl,
    label,
    run: async (round): Promise<RunResult> => {
      const group = `backlog-${impl}-${round}`;
      const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key: KEY, group, recordLatency: false, ...(options ? { options } : {}) });
      try {
        const before = await worker.stats();
        const startedAt = await worker.go();
        const deadline = Date.now() + ctx.config.backlogSeconds * 1000;
        let peakKb = 0;
        while (Date.now() < deadline) {
          await sleep(100);
          peakKb = Math.max(peakKb, worker.peakRssKb() || 0);
        }
        const stats = await worker.stats();
        peakKb = Math.max(peakKb, worker.peakRssKb() || 0, stats.maxRssKb);
        const elapsedS = (nowNs() - startedAt) / 1e9;
        const mb = (kb: number) => kb / 1024;
        const { memory } = stats;
        return {
          msgsPerSec: stats.count / elapsedS,
          peakRssMb: peakKb / 1024,
          cpuUsPerEntry: stats.count > 0 ? ((stats.cpuMs - before.cpuMs) * 1000) / stats.count : Number.NaN,
          // Where the memory is at the end of the run (V8's heap spaces, buffers outside it).
          extra: { consumed: stats.count, newSpaceMb: mb(memory.newSpaceKb), oldSpaceMb: mb(memory.oldSpaceKb), otherHeapMb: mb(memory.otherHeapKb), externalMb: mb(memory.externalKb) },
        };
      } finally {
        await worker.stop();
        await ctx.admin.xgroup('DESTROY', KEY, group).catch(() => undefined);
      }
    },
  };
}
