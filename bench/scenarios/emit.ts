import { Redis } from 'ioredis';
import { nowNs } from '../clock.js';
import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { rawXadd, sendInFlight } from '../producers.js';
import { streamsEmitter } from '../streams.js';

/** Emit only: XADD as fast as possible with 256 messages in flight; nobody consumes. */
export const emitScenario: Scenario = {
  id: 'emit',
  title: 'emit only, 256 in flight',
  reference: 'raw',
  contenders: (ctx) => [rawContender(ctx), streamsContender(ctx)],
};

async function timedEmit(ctx: BenchContext, key: string, sendOne: () => Promise<unknown>): Promise<RunResult> {
  const total = ctx.config.emitMessages;
  const start = nowNs();
  await sendInFlight(total, ctx.config.inFlight, sendOne);
  const elapsedNs = nowNs() - start;
  const length = await ctx.admin.xlen(key);
  await ctx.admin.del(key);
  if (length < total * 0.99) throw new Error(`stream has ${length} entries, expected ${total}`);
  return { msgsPerSec: total / (elapsedNs / 1e9) };
}

function rawContender(ctx: BenchContext): Contender {
  let redis: Redis | undefined;
  return {
    impl: 'raw',
    label: 'raw ioredis XADD (auto-pipelining)',
    setup: async () => {
      redis = new Redis(ctx.server.url, { enableAutoPipelining: true });
      await redis.ping();
    },
    run: (round) => {
      const key = `bench:emit:raw:${round}`;
      return timedEmit(ctx, key, rawXadd(redis!, key, ctx.config.maxLen));
    },
    teardown: async () => {
      await redis?.quit();
    },
  };
}

function streamsContender(ctx: BenchContext): Contender {
  const emitter = streamsEmitter(ctx.server.url);
  return {
    impl: 'streams',
    label: 'RedisStreamsClient.emit',
    ...(emitter.unavailable ? { unavailable: emitter.unavailable } : {}),
    setup: () => emitter.open(),
    run: (round) => {
      const key = `bench:emit:streams:${round}`;
      return timedEmit(ctx, key, () => emitter.emit(key));
    },
    teardown: () => emitter.close(),
  };
}
