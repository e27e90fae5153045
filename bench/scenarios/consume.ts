import { fillStream, waitAcked } from '../producers.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';
import { deleteLifecycleKeys, lifecycleContenders } from './lifecycle.js';

/**
 * Consume only: the stream is filled first (not timed); a fresh worker process then starts and
 * consumes it; the rate runs from the start call to the handler seeing the last message. The
 * rate until the group has nothing pending (acks included) is kept as `ackedMsgsPerSec`.
 */
export const consumeScenario: Scenario = {
  id: 'consume',
  title: 'consume only, pre-filled stream, no-op handler',
  reference: 'raw',
  contenders: (ctx) => [
    workerContender(ctx, 'raw', 'raw XREADGROUP COUNT 100 + XACK loop', 'raw-worker'),
    workerContender(ctx, 'raw-nest-handler', 'raw XREADGROUP/XACK loop → Nest @EventPattern pipeline', 'nest-raw-loop-worker'),
    {
      ...workerContender(ctx, 'streams', 'RedisStreamsServer', 'streams-worker'),
      ...(streamsPieces.server ? {} : { unavailable: 'RedisStreamsServer has not landed yet' }),
    },
    // The same run with the lease thread off, and with leases off (docs/benchmarks.md: the thread's cost is streams against these).
    workerContender(ctx, 'streams-lease-thread-off', 'RedisStreamsServer, leases renewed on the event loop (recovery.leases: { thread: false })', 'streams-worker', undefined, { leaseThread: false }),
    workerContender(ctx, 'streams-leases-off', 'RedisStreamsServer, no lease renewal (recovery.leases: false)', 'streams-worker', undefined, { leases: false }),
    workerContender(ctx, 'streams-batch', 'RedisStreamsServer, batch handler (extras.batch size 100)', 'streams-batch-worker'),
    workerContender(ctx, 'streams-batch-leases-off', 'RedisStreamsServer, batch handler (size 100), recovery.leases: false', 'streams-batch-worker', undefined, { leases: false }),
    workerContender(ctx, 'raw-otel', 'raw XREADGROUP/XACK loop + the same SDK: span, histogram, counter per entry', 'raw-otel-worker'),
    workerContender(ctx, 'streams-otel', 'RedisStreamsServer, OpenTelemetry SDK registered (traces + metrics)', 'streams-otel-worker'),
    workerContender(ctx, 'streams-otel-sampled', 'RedisStreamsServer, OpenTelemetry SDK, traces sampled at 1 % (parent-based) + metrics', 'streams-otel-worker', undefined, { otel: 'sampled' }),
    workerContender(ctx, 'streams-otel-metrics', 'RedisStreamsServer, OpenTelemetry SDK, metrics only', 'streams-otel-worker', undefined, { otel: 'metrics' }),
    workerContender(ctx, 'streams-batch-otel', 'RedisStreamsServer, batch handler (size 100), OpenTelemetry SDK (traces + metrics)', 'streams-otel-worker', undefined, { batch: true }),
    // The entry lifecycle's cost (docs/lifecycle.md): each against the same handler using none of it.
    ...lifecycleContenders(ctx, workerContender),
  ],
};

/** What the consume run of another scenario changes: its key names, the worker's options, what must be left in the stream. */
export interface ConsumeRunVariant {
  readonly scenario: string;
  readonly options: Record<string, string | number | boolean>;
  /** Entries the stream must still hold after the run (XACK leaves them, XACKDEL not). */
  readonly expectedLeft: (total: number) => number;
}

/**
 * The consume run (fill, fresh worker, time to the last entry); `variant` for scenarios built on
 * it; `workerOptions` for the worker alone (which SDK set-up streams-otel-worker registers).
 */
export function workerContender(
  ctx: BenchContext,
  impl: string,
  label: string,
  script: string,
  variant?: ConsumeRunVariant,
  workerOptions?: Record<string, string | boolean>,
): Contender {
  const options = variant || workerOptions ? { ...variant?.options, ...workerOptions } : undefined;
  return {
    impl,
    label,
    run: async (round): Promise<RunResult> => {
      const total = ctx.config.consumeMessages;
      const key = `bench:${variant?.scenario ?? 'consume'}:${impl}:${round}`;
      const group = 'bench';
      await fillStream(ctx.admin, key, total);
      const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key, group, recordLatency: false, ...(options ? { options } : {}) });
      try {
        const before = await worker.stats();
        const reached = worker.waitFor(total, 120_000);
        const startedAt = await worker.go();
        const reachedAt = await reached;
        const ackedAt = await waitAcked(ctx.admin, key, group);
        const after = await worker.stats();
        const { firstAt, halfAt } = after;
        if (variant !== undefined) {
          const left = await ctx.admin.xlen(key);
          const expected = variant.expectedLeft(total);
          if (left !== expected) throw new Error(`${left} entries left in the stream, expected ${expected}`);
        }
        return {
          msgsPerSec: total / ((reachedAt - startedAt) / 1e9),
          // The second half of the entries: connections, listen() and the JIT's warm-up left out.
          steadyMsgsPerSec: (total - Math.floor(total / 2)) / ((reachedAt - halfAt) / 1e9),
          // Until the group had nothing pending: the acks of the last entries are part of the cost.
          cpuUsPerEntry: ((after.cpuMs - before.cpuMs) * 1000) / total,
          // The second half of the entries (halfAt to the last): what the start-up (connections, the lease thread's load) leaves.
          steadyCpuUsPerEntry: ((after.lastCpuMs - after.halfCpuMs) * 1000) / (total - Math.floor(total / 2)),
          extra: {
            // The worker's CPU for the run: a shared host slows the clock, not this.
            workerCpuMs: after.cpuMs - before.cpuMs,
            workerUserCpuMs: after.cpuUserMs - before.cpuUserMs,
            workerSystemCpuMs: after.cpuSystemMs - before.cpuSystemMs,
            workerRssMb: after.rssKb / 1024,
            workerPeakRssMb: after.maxRssKb / 1024,
            ackedMsgsPerSec: total / ((Math.max(ackedAt, reachedAt) - startedAt) / 1e9),
            firstEntryMs: (firstAt - startedAt) / 1e6,
            // The worker's CPU from the start call to its first entry: listen() and the first read.
            startCpuMs: after.firstCpuMs - before.cpuMs,
            firstToLastMsgsPerSec: (total - 1) / ((reachedAt - firstAt) / 1e9),
          },
        };
      } finally {
        await worker.stop();
        await ctx.admin.del(key);
        await deleteLifecycleKeys(ctx.admin, key);
      }
    },
  };
}
