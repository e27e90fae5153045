import { nowNs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { fillKeys } from '../shape.js';
import { WorkerProcess } from '../worker-process.js';

const PAYLOAD_BYTES = 1_000_000;
const HANDLER_MS = 10;

interface Variant {
  impl: string;
  label: string;
  options: Record<string, number>;
}

const VARIANTS: readonly Variant[] = [
  { impl: 'uncapped', label: 'no byte cap (maxPrefetchBytes 2^50, prefetch 200: as before issue 18)', options: { maxPrefetchBytes: 2 ** 50, prefetch: 200 } },
  { impl: 'default', label: 'defaults (maxPrefetchBytes 64 MiB)', options: {} },
  { impl: 'cap-16', label: 'maxPrefetchBytes 16 MiB', options: { maxPrefetchBytes: 16 * 1024 * 1024 } },
];

/**
 * 1 MB payloads, a handler that takes 10 ms: the worker's peak RSS (VmHWM) and MB/s. Without a
 * byte bound prefetch (in entries) holds 200 MB; the cap bounds it.
 */
export const largePayloadScenario: Scenario = {
  id: 'large',
  title: '1 MB payloads, handler 10 ms: peak RSS and MB/s',
  reference: 'uncapped',
  contenders: (ctx) => VARIANTS.map((variant) => variantContender(ctx, variant)),
};

function variantContender(ctx: BenchContext, variant: Variant): Contender {
  return {
    impl: variant.impl,
    label: variant.label,
    run: async (round): Promise<RunResult> => {
      const total = ctx.config.quick ? 60 : 300;
      const key = `bench:large:${variant.impl}:${round}`;
      await fillKeys(ctx.admin, [key], total, PAYLOAD_BYTES);
      const options = { delayMs: HANDLER_MS, ...variant.options };
      const worker = await WorkerProcess.spawn('shape-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: false, options });
      try {
        const readyKb = worker.peakRssKb();
        const reached = worker.waitFor(total, 180_000);
        const startedAt = await worker.go();
        let done = false;
        let peakKb = readyKb;
        const sampling = (async () => {
          while (!done) {
            peakKb = Math.max(peakKb, worker.peakRssKb() || 0);
            await sleep(50);
          }
        })();
        const reachedAt = await reached;
        done = true;
        await sampling;
        peakKb = Math.max(peakKb, worker.peakRssKb() || 0, (await worker.stats()).maxRssKb);
        const seconds = (reachedAt - startedAt) / 1e9;
        return { msgsPerSec: total / seconds, peakRssMb: peakKb / 1024, extra: { mbPerSec: (total * PAYLOAD_BYTES) / 1e6 / seconds, readyRssMb: readyKb / 1024, elapsedS: (nowNs() - startedAt) / 1e9 } };
      } finally {
        await worker.stop();
        await ctx.admin.del(key);
      }
    },
  };
}
