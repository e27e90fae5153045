import { RedisStreamsOptionError } from '../errors.js';
import type { StreamBinding } from './in-flight.js';
import type { ResolvedServerOptions } from './options.js';

/**
 * Prefetch slots a reader gets per stream it reads, when that is more than its base share: COUNT
 * applies per stream, and a read must fit twice in the share (one in flight while the previous is
 * handled) for the reads to overlap the handlers. With 1 slot per stream (200 streams sharing 200)
 * a read had to wait for every slot to come back. 10 per stream is what ran 200 streams at one
 * stream's speed (docs/benchmarks.md).
 */
export const DEFAULT_SLOTS_PER_STREAM = 10;

/** The prefetch of a server, and the most slots each reader may reserve (in the order of `readers`). */
export interface PrefetchPlan {
  readonly prefetch: number;
  readonly shares: readonly number[];
}

/**
 * Splits prefetch between the blocking readers (one per consumer group, or per stream + group on a
 * Cluster). Each reader weighs `max(base, DEFAULT_SLOTS_PER_STREAM × its streams)`, base being the
 * one-reader default (max(2 × concurrency, 4 × readBatch)) or the given prefetch. Without a given
 * prefetch the server's prefetch is the sum of the weights, so each reader has what one reader of
 * one stream would have: 20 groups do not split 400 slots 20 ways, 200 streams do not read one
 * entry each. Memory stays bounded by `maxPrefetchBytes`, whatever the count. With a given
 * prefetch the readers split it by weight (each at least one slot per stream it reads).
 */
export function planPrefetch(options: ResolvedServerOptions, readers: readonly (readonly StreamBinding[])[]): PrefetchPlan {
  const streams = readers.reduce((sum, reader) => sum + reader.length, 0);
  if (options.prefetchGiven && streams > options.prefetch) {
    throw new RedisStreamsOptionError('prefetch', `must be at least the number of handled streams (${streams}), got ${options.prefetch}`);
  }
  const weights = readers.map((reader) => Math.max(options.prefetch, DEFAULT_SLOTS_PER_STREAM * reader.length));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  if (!options.prefetchGiven) return { prefetch: Math.max(options.prefetch, total), shares: weights };
  return {
    prefetch: options.prefetch,
    shares: readers.map((reader, i) => Math.max(reader.length, Math.floor((options.prefetch * (weights[i] as number)) / total))),
  };
}
