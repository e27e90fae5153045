import type { BenchContext, Contender, RunResult, Scenario } from '../measure.js';
import { fillKeys, shapeKeys } from '../shape.js';
import { WorkerProcess } from '../worker-process.js';

interface Shape {
  impl: string;
  label: string;
  streams: number;
  groups: number;
  /** Server options beyond the defaults (the old fixed prefetch, to compare). */
  options?: Record<string, number>;
}

const SHAPES: readonly Shape[] = [
  { impl: 'one', label: '1 stream, 1 group (defaults)', streams: 1, groups: 1 },
  { impl: 'streams-200', label: '200 streams, 1 group (defaults)', streams: 200, groups: 1 },
  { impl: 'streams-200-p200', label: '200 streams, 1 group, prefetch 200 (the old default)', streams: 200, groups: 1, options: { prefetch: 200 } },
  { impl: 'groups-20', label: '1 stream, 20 groups (defaults)', streams: 1, groups: 20 },
  { impl: 'groups-20-p200', label: '1 stream, 20 groups, prefetch 200 (the old default)', streams: 1, groups: 20, options: { prefetch: 200 } },
];

/**
 * The shape of the work: one worker process reading 200 streams, or one stream in 20 groups,
 * against one stream in one group, all with the same number of handler calls (the streams are
 * filled first, not timed). Handler calls per second from the start to the last call.
 */
export const shapeScenario: Scenario = {
  id: 'shape',
  title: 'many streams, many groups vs one stream (handler calls/s, no-op handler)',
  reference: 'one',
  contenders: (ctx) => SHAPES.map((shape) => shapeContender(ctx, shape)),
};

function shapeContender(ctx: BenchContext, shape: Shape): Contender {
  return {
    impl: shape.impl,
    label: shape.label,
    run: async (round): Promise<RunResult> => {
      const calls = ctx.config.consumeMessages;
      const key = `bench:shape:${shape.impl}:${round}`;
      const keys = shapeKeys(key, shape.streams);
      await fillKeys(ctx.admin, keys, calls / shape.groups);
      const options = { streams: shape.streams, groups: shape.groups, ...shape.options };
      const worker = await WorkerProcess.spawn('shape-worker', { redisUrl: ctx.server.url, key, group: 'bench', recordLatency: false, options });
      try {
        const reached = worker.waitFor(calls, 180_000);
        const startedAt = await worker.go();
        const reachedAt = await reached;
        return { msgsPerSec: calls / ((reachedAt - startedAt) / 1e9) };
      } finally {
        await worker.stop();
        await ctx.admin.del(...keys);
      }
    },
  };
}
