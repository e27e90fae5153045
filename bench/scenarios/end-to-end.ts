import type { ClientProxy } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import { nowNs, sleep } from '../clock.js';
import type { BenchContext, Contender, RunResult } from '../measure.js';
import type { Scenario } from '../measure.js';
import { bullmqAddBulk, bullmqQueue, nestEmit, nestRedisClient } from '../peers.js';
import { rawXadd, sendInFlight, waitAcked } from '../producers.js';
import { streamsEmitter, streamsPieces } from '../streams.js';
import { WorkerProcess } from '../worker-process.js';

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
    nestRedisContender(ctx),
    bullmqContender(ctx),
  ],
};

interface E2eRun {
  ctx: BenchContext;
  script: string;
  key: string;
  total: number;
  /** Waits until the worker can receive (pub/sub loses messages sent before SUBSCRIBE). */
  whenListening?: () => Promise<void>;
  produce: () => Promise<void>;
  /** Stream and group to check for leftovers once the handler saw everything. */
  acked?: { key: string; group: string };
}

async function e2eRun({ ctx, script, key, total, whenListening, produce, acked }: E2eRun): Promise<RunResult> {
  const worker = await WorkerProcess.spawn(script, { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: false });
  try {
    await worker.go();
    await whenListening?.();
    const before = await worker.stats();
    const reached = worker.waitFor(total, 180_000);
    const start = nowNs();
    await produce();
    const producedAt = nowNs();
    const reachedAt = await reached;
    // The worker's CPU until the handler saw the last message (a shared host slows the clock, not this).
    const workerCpuMs = (await worker.stats()).cpuMs - before.cpuMs;
    const extra: Record<string, number> = { produceMsgsPerSec: total / ((producedAt - start) / 1e9), workerCpuMs };
    if (acked) {
      const ackedAt = await waitAcked(ctx.admin, acked.key, acked.group);
      extra.ackedMsgsPerSec = total / ((Math.max(ackedAt, reachedAt) - start) / 1e9);
    }
    return { msgsPerSec: total / ((reachedAt - start) / 1e9), extra };
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
function streamsContender(ctx: BenchContext, impl = 'streams', label = 'RedisStreamsClient → RedisStreamsServer', script = 'streams-worker'): Contender {
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
          ctx, script, key, total,
          produce: () => sendInFlight(total, ctx.config.inFlight, () => emitter.emit(key)),
          acked: { key, group: 'bench' },
        });
      } finally {
        await ctx.admin.del(key);
      }
    },
    teardown: () => emitter.close(),
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
