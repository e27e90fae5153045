import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { nowNs, realtimeOffsetMs, sleep } from '../clock.js';
import type { RunResult, Scenario } from '../measure.js';
import { makePayloadAt } from '../payload.js';
import { delayedEmitter } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

/** Entries emitted at once in a burst, due 0 to MAX_DELAY_MS after it. */
const BURST = 20;
const MAX_DELAY_MS = 2_000;
/** Before each burst the worker idles a random 0..IDLE_SPREAD_MS more: its interval timer is at any phase when the burst comes. */
const IDLE_SPREAD_MS = 1_000;

/**
 * Lateness from idle (issue 40 item 3, docs/scheduling.md "Wake-up"): one worker with the
 * `delayed` defaults (interval 1 s) and nothing held; a burst of entries emitted at once, each due
 * a random 0–2 s after it (`deliverAt`: due at once for 0), in random order; when the worker has
 * handled the burst it idles a random 0–1 s and the next burst comes. Every burst's first entry
 * is held while the worker's next round is up to `interval` away (the case the wake-up is for);
 * each later one that is due before every entry already held is too. p50 / p99 / `maxMs` of
 * handler time minus due time over all entries of the run (the payload carries the due time on
 * the shared monotonic clock, clock.ts).
 */
export const delayedWakeScenario: Scenario = {
  id: 'delayed-wake',
  title: `delayed emits to an idle worker, due 0–${MAX_DELAY_MS / 1000} s after: handler time − due time`,
  reference: 'streams',
  runs: (config) => (config.quick ? { warmups: 0, runs: 1 } : { warmups: 0, runs: 3 }),
  contenders: (ctx) => {
    const emitter = delayedEmitter(ctx.server.url);
    return [
      {
        impl: 'streams',
        label: 'RedisStreamsClient deliverAt → RedisStreamsServer (delayed defaults), bursts from idle',
        setup: () => emitter.open(),
        run: async (round): Promise<RunResult> => {
          const key = `bench:delayed-wake:${round}`;
          const worker = await WorkerProcess.spawn('streams-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: true });
          const random = seeded(round + 1);
          try {
            await worker.go();
            const offsetMs = realtimeOffsetMs();
            const bursts = ctx.config.delayedWakeBursts;
            let sent = 0;
            for (let burst = 0; burst < bursts; burst++) {
              await sleep(Math.round(random() * IDLE_SPREAD_MS));
              const nowMs = Math.ceil(nowNs() / 1e6 + offsetMs);
              const emits = Array.from({ length: BURST }, () => {
                const dueMs = nowMs + Math.round(random() * MAX_DELAY_MS);
                return emitter.emitAt(key, makePayloadAt((dueMs - offsetMs) * 1e6), dueMs);
              });
              await Promise.all(emits);
              sent += BURST;
              await worker.waitFor(sent, 60_000);
            }
            const { latency } = await worker.stats();
            const held = await ctx.admin.zcard(delayedKeys(key).schedule);
            if (latency.count !== sent || held !== 0) throw new Error(`${latency.count} of ${sent} entries handled, ${held} still held`);
            return { p50Ms: latency.p50Ms, p99Ms: latency.p99Ms, maxMs: latency.maxMs, extra: { messages: latency.count, bursts } };
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

/** The same delays and idle times every run of a round number (mulberry32). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
