import type { Redis } from 'ioredis';
import type { BenchContext, Contender } from '../measure.js';

/** The lifecycle options of workers/streams-lifecycle-worker.ts, by contender. */
export const LIFECYCLE_CONTENDERS = [
  { impl: 'streams-lifecycle-off', lifecycle: 'none', label: 'RedisStreamsServer, the lifecycle worker using none of it (the reference of the lifecycle rows)' },
  { impl: 'streams-keep-results', lifecycle: 'keep-results', label: 'RedisStreamsServer, extras.keepResults (the payload returned and kept, 60 s)' },
  { impl: 'streams-progress', lifecycle: 'progress', label: 'RedisStreamsServer, one ctx.progress() per entry' },
  { impl: 'streams-progress-100', lifecycle: 'progress-100', label: 'RedisStreamsServer, 100 ctx.progress() per entry (coalesced: one write)' },
  { impl: 'streams-timeout', lifecycle: 'timeout', label: 'RedisStreamsServer, extras.timeout 60 s (never reached)' },
  { impl: 'streams-signal', lifecycle: 'signal', label: 'RedisStreamsServer, ctx.signal read per entry' },
] as const;

/** The lifecycle contenders of a scenario, made by its own contender factory with the worker's `lifecycle` option. */
export function lifecycleContenders(
  ctx: BenchContext,
  make: (ctx: BenchContext, impl: string, label: string, script: string, variant: undefined, options: Record<string, string>) => Contender,
  only: readonly string[] = LIFECYCLE_CONTENDERS.map((contender) => contender.impl),
): Contender[] {
  return LIFECYCLE_CONTENDERS.filter((contender) => only.includes(contender.impl)).map(({ impl, lifecycle, label }) =>
    make(ctx, impl, label, 'streams-lifecycle-worker', undefined, { lifecycle }),
  );
}

/** Deletes what a run's handler kept next to the stream (`{<key>}:progress:*`, `:result:*`, `:lifecycle`): not timed. */
export async function deleteLifecycleKeys(admin: Redis, key: string): Promise<void> {
  const pattern = `{${key}}:*`;
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) await admin.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
