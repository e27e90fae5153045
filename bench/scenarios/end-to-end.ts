import type { ClientProxy } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { nowNs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult } from '../measure.js';
import type { Scenario } from '../measure.js';
import { bullmqAddBulk, bullmqQueue, nestEmit, nestRedisClient } from '../peers.js';
import { rawXadd, sendInFlight, waitAcked } from '../producers.js';
import { streamsEmitter, streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';
import { deleteLifecycleKeys, lifecycleContenders } from './lifecycle.js';

/**
 * End to end: this process produces (256 in flight) while one worker process consumes; the rate
 * runs from the first send to the handler seeing the last message.
 */
export const endToEndScenario: Scenario = {
  id: 'e2e',
  title: 'end to end, producer + 1 worker process',
  reference: 'raw',
  contenders: (ctx) => [
    rawContender(ctx),
    rawContender(ctx, 'raw-nest-handler', 'raw XADD + XREADGROUP/XACK loop → Nest @EventPattern pipeline', 'nest-raw-loop-worker'),
    streamsContender(ctx),
    streamsContender(ctx, 'streams-batch', 'RedisStreamsClient → RedisStreamsServer, batch handler (extras.batch size 100)', 'streams-batch-worker'),
    streamsContender(ctx, 'streams-otel', 'RedisStreamsClient → RedisStreamsServer, OpenTelemetry SDK in the worker', 'streams-otel-worker'),
    // Telemetry on both sides: the producer in a child of its own, so it can register an SDK.
    producerProcessContender(ctx, 'streams-pp', 'RedisStreamsClient (producer process) → RedisStreamsServer, no SDK', 'streams-worker', { client: 'streams', otel: 'none' }),
    producerProcessContender(ctx, 'streams-otel-both', 'RedisStreamsClient → RedisStreamsServer, OpenTelemetry SDK in producer and worker', 'streams-otel-worker', { client: 'streams', otel: 'traces' }),
    producerProcessContender(ctx, 'streams-otel-both-sampled', 'RedisStreamsClient → RedisStreamsServer, SDK in both, 1 % parent-based sampling', 'streams-otel-worker', { client: 'streams', otel: 'sampled' }, { otel: 'sampled' }),
    producerProcessContender(ctx, 'streams-otel-both-metrics', 'RedisStreamsClient → RedisStreamsServer, SDK in both, metrics only', 'streams-otel-worker', { client: 'streams', otel: 'metrics' }, { otel: 'metrics' }),
    producerProcessContender(ctx, 'raw-otel-both', 'raw XADD + XREADGROUP/XACK loop, the same SDK work per entry in producer and worker', 'raw-otel-worker', { client: 'raw', otel: 'traces' }),
    nestRedisContender(ctx),
    bullmqContender(ctx),
    // The entry lifecycle's cost with a producer running (docs/lifecycle.md): the writes per entry share Redis with the XADDs.
    ...lifecycleContenders(ctx, (ctx, impl, label, script, _variant, options) => streamsContender(ctx, impl, label, script, options), ['streams-lifecycle-off', 'streams-keep-results', 'streams-progress', 'streams-timeout']),
  ],
};

/** What a producer child reports (workers/otel-producer.ts): shared-clock readings at its first send and last reply. */
interface ProducedElsewhere {
  startedAt: number;
  producedAt: number;
  producerCpuMs: number;
}

interface E2eRun {
  ctx: BenchContext;
  script: string;
  key: string;
  total: number;
  workerOptions?: Record<string, string | boolean>;
  /** Waits until the worker can receive (pub/sub loses messages sent before SUBSCRIBE). */
  whenListening?: () => Promise<void>;
  /** Produces here, or in a child that reports when it sent (then the run is timed from its first send). */
  produce: () => Promise<void | ProducedElsewhere>;
  /** Stream and group to check for leftovers once the handler saw everything. */
  acked?: { key: string; group: string };
}

async function e2eRun({ ctx, script, key, total, workerOptions, whenListening, produce, acked }: E2eRun): Promise<RunResult> {
  const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: false, ...(workerOptions ? { options: workerOptions } : {}) });
  try {
    await worker.go();
    await whenListening?.();
    const before = await worker.stats();
    const reached = worker.waitFor(total, 180_000);
    let start = nowNs();
    const elsewhere = await produce();
    let producedAt = nowNs();
    if (elsewhere) ({ startedAt: start, producedAt } = elsewhere);
    const reachedAt = await reached;
    // The worker's CPU until the handler saw the last message (a shared host slows the clock, not this).
    const workerCpuMs = (await worker.stats()).cpuMs - before.cpuMs;
    const extra: Record<string, number> = { produceMsgsPerSec: total / ((producedAt - start) / 1e9), workerCpuMs, ...(elsewhere ? { producerCpuMs: elsewhere.producerCpuMs } : {}) };
    if (acked) {
      const ackedAt = await waitAcked(ctx.admin, acked.key, acked.group);
      extra.ackedMsgsPerSec = total / ((Math.max(ackedAt, reachedAt) - start) / 1e9);
    }
    return { msgsPerSec: total / ((reachedAt - start) / 1e9), cpuUsPerEntry: (workerCpuMs * 1000) / total, extra };
  } finally {
    await worker.stop();
  }
}

/** `raw-nest-handler`: the same producer, the raw loop calling Nest's handler pipeline per entry. */
function rawContender(ctx: BenchContext, impl = 'raw', label = 'raw XADD + XREADGROUP/XACK loop', script = 'raw-worker'): Contender {
  let redis: Redis | undefined;
  return {
    impl,
    label,
    setup: async () => {
      redis = new Redis(ctx.server.url, { enableAutoPipelining: true });
    },
    run: async (round) => {
      const key = `bench:e2e:${impl}:${round}`;
      const total = ctx.config.endToEndMessages;
      try {
        return await e2eRun({
          ctx, script, key, total,
          produce: () => sendInFlight(total, ctx.config.inFlight, rawXadd(redis!, key, ctx.config.maxLen)),
          acked: { key, group: 'bench' },
        });
      } finally {
        await ctx.admin.del(key);
      }
    },
    teardown: async () => {
      await redis?.quit();
    },
  };
}

/** `streams-otel`: the same, with an OpenTelemetry SDK registered in the worker (traces + metrics on). */
function streamsContender(ctx: BenchContext, impl = 'streams', label = 'RedisStreamsClient → RedisStreamsServer', script = 'streams-worker', workerOptions?: Record<string, string>): Contender {
  const emitter = streamsEmitter(ctx.server.url);
  const unavailable = emitter.unavailable ?? (streamsPieces.server ? undefined : 'RedisStreamsServer has not landed yet');
  return {
    impl,
    label,
    ...(unavailable ? { unavailable } : {}),
    setup: () => emitter.open(),
    run: async (round) => {
      const key = `bench:e2e:${impl}:${round}`;
      const total = ctx.config.endToEndMessages;
      try {
        return await e2eRun({
          ctx, script, key, total, ...(workerOptions ? { workerOptions } : {}),
          produce: () => sendInFlight(total, ctx.config.inFlight, () => emitter.emit(key)),
          acked: { key, group: 'bench' },
        });
      } finally {
        await ctx.admin.del(key);
        await deleteLifecycleKeys(ctx.admin, key);
      }
    },
    teardown: () => emitter.close(),
  };
}

/**
 * The producer in a child process of its own (workers/otel-producer.ts), `producer` its options;
 * `script` the worker with `workerOptions`. The telemetry-on-both-sides contenders and their
 * references, all produced the same way.
 */
function producerProcessContender(
  ctx: BenchContext,
  impl: string,
  label: string,
  script: string,
  producer: { client: 'streams' | 'raw'; otel: 'none' | 'traces' | 'sampled' | 'metrics' },
  workerOptions?: Record<string, string | boolean>,
): Contender {
  return {
    impl,
    label,
    run: async (round) => {
      const key = `bench:e2e:${impl}:${round}`;
      const total = ctx.config.endToEndMessages;
      const options = { ...producer, total, inFlight: ctx.config.inFlight, maxLen: ctx.config.maxLen };
      try {
        return await e2eRun({
          ctx, script, key, total, ...(workerOptions ? { workerOptions } : {}),
          produce: async () =>
            (await WorkerProcess.runOnce('otel-producer', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: false, options }, 180_000)) as unknown as ProducedElsewhere,
          acked: { key, group: 'bench' },
        });
      } finally {
        await ctx.admin.del(key);
      }
    },
  };
}

function nestRedisContender(ctx: BenchContext): Contender {
  let client: ClientProxy | undefined;
  return {
    impl: 'nest-redis',
    label: 'Nest Redis transport (pub/sub) emit → @EventPattern',
    setup: async () => {
      client = await nestRedisClient(ctx.server.url);
    },
    run: (round) => {
      const key = `bench:e2e:nest:${round}`;
      const total = ctx.config.endToEndMessages;
      return e2eRun({
        ctx, script: 'nest-redis-worker', key, total,
        whenListening: () => waitSubscribed(ctx, key),
        produce: () => sendInFlight(total, ctx.config.inFlight, nestEmit(client!, key)),
      });
    },
    teardown: async () => {
      await client?.close();
    },
  };
}

function bullmqContender(ctx: BenchContext): Contender {
  const batch = 64;
  return {
    impl: 'bullmq',
    label: 'BullMQ Queue.addBulk + Worker (concurrency 50)',
    run: async (round) => {
      const key = `bench-e2e-bullmq-${round}`;
      const total = Math.ceil(ctx.config.bullmqMessages / batch) * batch;
      const queue = bullmqQueue(ctx.server.url, key);
      try {
        await queue.waitUntilReady();
        return await e2eRun({
          ctx, script: 'bullmq-worker', key, total,
          // 256 in flight, as for the others: 4 addBulk calls of 64 jobs.
          produce: () => sendInFlight(total / batch, ctx.config.inFlight / batch, bullmqAddBulk(queue, batch)),
        });
      } finally {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    },
  };
}

async function waitSubscribed(ctx: BenchContext, channel: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const reply = (await ctx.admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
    if (Number(reply[1]) > 0) return;
    if (Date.now() > deadline) throw new Error(`nobody subscribed to ${channel}`);
    await sleep(5);
  }
}
