import { Redis } from 'ioredis';
import { nowNs } from '../clock.js';
import { makePayload } from '../payload.js';
import { workerContender } from './consume.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { rawXadd, sendInFlight } from '../producers.js';
import { idempotentEmitter, streamsEmitter, type StreamsEmitter } from '../streams.js';

/**
 * What the Redis 8 features cost, side by side with the plain commands in one run (issue 10):
 * idempotent emits (IDMP / IDMPAUTO, Redis 8.6+) against plain XADD, and work-queue acks (XACKDEL,
 * Redis 8.2+) against plain XACK. Each scenario is skipped, with a note, on a server without the
 * capability (probed as the transport probes it), so the bench still runs on older servers.
 */
export const idmpEmitScenario: Scenario = {
  id: 'emit-idmp',
  title: 'emit with IDMP / IDMPAUTO vs plain XADD, 256 in flight',
  reference: 'streams',
  skip: (ctx) => (ctx.capabilities.idmp ? undefined : 'the server lacks the idmp capability (XADD IDMP / IDMPAUTO, Redis 8.6+)'),
  contenders: (ctx) => [
    rawEmitContender(ctx, 'raw', 'raw ioredis XADD (auto-pipelining)', []),
    rawEmitContender(ctx, 'raw-idmpauto', 'raw ioredis XADD IDMPAUTO (auto-pipelining)', ['IDMPAUTO', 'bench-raw']),
    streamsEmitContender(ctx, 'streams', 'RedisStreamsClient.emit', streamsEmitter(ctx.server.url)),
    streamsEmitContender(ctx, 'streams-idmpauto', 'RedisStreamsClient.emit, idempotence (IDMPAUTO)', idempotentEmitter(ctx.server.url, 'auto')),
    streamsEmitContender(ctx, 'streams-idmp', 'RedisStreamsClient.emit, idempotencyKey per emit (IDMP)', idempotentEmitter(ctx.server.url, 'keyed')),
  ],
};

export const workQueueConsumeScenario: Scenario = {
  id: 'consume-workqueue',
  title: 'consume with XACKDEL (workQueue) vs plain XACK, pre-filled stream, no-op handler',
  reference: 'streams',
  skip: (ctx) => (ctx.capabilities.xackdel ? undefined : 'the server lacks the xackdel capability (XACKDEL, Redis 8.2+)'),
  contenders: (ctx) => [
    consumeContender(ctx, 'raw', 'raw XREADGROUP COUNT 100 + XACK loop', 'raw-worker', {}),
    consumeContender(ctx, 'raw-xackdel', 'raw XREADGROUP COUNT 100 + XACKDEL KEEPREF loop', 'raw-worker', { ack: 'xackdel' }),
    consumeContender(ctx, 'streams', 'RedisStreamsServer (XACK)', 'streams-worker', {}),
    consumeContender(ctx, 'streams-workqueue', 'RedisStreamsServer, workQueue: true (XACKDEL KEEPREF)', 'streams-worker', { workQueue: true }),
  ],
};

/** Every emit must have written its own entry (the payloads differ, so IDMPAUTO dedups nothing). */
async function timedEmit(ctx: BenchContext, key: string, sendOne: () => Promise<unknown>): Promise<RunResult> {
  const total = ctx.config.emitMessages;
  const cpu = process.cpuUsage();
  const start = nowNs();
  await sendInFlight(total, ctx.config.inFlight, sendOne);
  const elapsedNs = nowNs() - start;
  const { user, system } = process.cpuUsage(cpu);
  const length = await ctx.admin.xlen(key);
  await ctx.admin.del(key);
  if (length !== total) throw new Error(`stream has ${length} entries, expected ${total}`);
  // The producer's CPU (this process): what the client spends, beside Redis' CPU (redisCpuMs).
  return { msgsPerSec: total / (elapsedNs / 1e9), extra: { clientCpuMs: (user + system) / 1000 } };
}

/** The raw producer of the emit scenario, with `idmp` words before the trim spec. */
function rawEmitContender(ctx: BenchContext, impl: string, label: string, idmp: string[]): Contender {
  let redis: Redis | undefined;
  return {
    impl,
    label,
    setup: async () => {
      redis = new Redis(ctx.server.url, { enableAutoPipelining: true });
      await redis.ping();
    },
    run: (round) => {
      const key = `bench:emit-idmp:${impl}:${round}`;
      if (idmp.length === 0) return timedEmit(ctx, key, rawXadd(redis!, key, ctx.config.maxLen));
      const cap = String(ctx.config.maxLen);
      return timedEmit(ctx, key, () => redis!.call('XADD', key, ...idmp, 'MAXLEN', '~', cap, '*', 'pattern', key, 'data', JSON.stringify(makePayload())));
    },
    teardown: async () => {
      await redis?.quit();
    },
  };
}

function streamsEmitContender(ctx: BenchContext, impl: string, label: string, emitter: StreamsEmitter): Contender {
  return {
    impl,
    label,
    setup: () => emitter.open(),
    run: (round) => {
      const key = `bench:emit-idmp:${impl}:${round}`;
      return timedEmit(ctx, key, () => emitter.emit(key));
    },
    teardown: () => emitter.close(),
  };
}

/** The consume scenario's run with worker options; an XACKDEL contender must leave the stream empty, an XACK one untouched. */
function consumeContender(ctx: BenchContext, impl: string, label: string, script: string, options: Record<string, string | boolean>): Contender {
  const deletes = options.ack === 'xackdel' || options.workQueue === true;
  return workerContender(ctx, impl, label, script, { scenario: 'consume-workqueue', options, expectedLeft: (total) => (deletes ? 0 : total) });
}
