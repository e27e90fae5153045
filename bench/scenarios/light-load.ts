import { Redis } from 'ioredis';
import type { BenchContext, Contender, Scenario } from '../measure.js';
import { rawXadd, sendPaced } from '../producers.js';
import { streamsEmitter, streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

/**
 * Light load: 1000 messages a second, paced; latency from the producer's stamp in the payload to
 * the handler in the worker process (both read the same monotonic clock).
 */
export const lightLoadScenario: Scenario = {
  id: 'light-load',
  title: 'light load, 1000 msg/s paced, emit → handler latency',
  reference: 'raw',
  contenders: (ctx) => {
    const emitter = streamsEmitter(ctx.server.url);
    const unavailable = emitter.unavailable ?? (streamsPieces.server ? undefined : 'RedisStreamsServer has not landed yet');
    let raw: Redis | undefined;
    return [
      {
        impl: 'raw',
        label: 'raw XADD → XREADGROUP BLOCK loop',
        setup: async () => {
          raw = new Redis(ctx.server.url, { enableAutoPipelining: true });
        },
        run: (round) => {
          const key = `bench:light:raw:${round}`;
          return pacedRun(ctx, 'raw-worker', key, rawXadd(raw!, key, ctx.config.maxLen));
        },
        teardown: async () => {
          await raw?.quit();
        },
      },
      {
        impl: 'streams',
        label: 'RedisStreamsClient → RedisStreamsServer',
        ...(unavailable ? { unavailable } : {}),
        setup: () => emitter.open(),
        run: (round) => {
          const key = `bench:light:streams:${round}`;
          return pacedRun(ctx, 'streams-worker', key, () => emitter.emit(key));
        },
        teardown: () => emitter.close(),
      },
    ] satisfies Contender[];
  },
};

async function pacedRun(ctx: BenchContext, script: string, key: string, sendOne: () => Promise<unknown>) {
  const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: true });
  try {
    await worker.go();
    const total = Math.round(ctx.config.lightLoadRate * ctx.config.lightLoadSeconds);
    const reached = worker.waitFor(total, 60_000);
    await sendPaced(ctx.config.lightLoadRate, ctx.config.lightLoadSeconds, sendOne);
    await reached;
    const { latency } = await worker.stats();
    return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, extra: { maxMs: latency.maxMs, messages: latency.count } };
  } finally {
    await worker.stop();
    await ctx.admin.del(key);
  }
}
