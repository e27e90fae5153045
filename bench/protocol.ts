import type { LatencySummary } from './stats.js';

/**
 * The messages a bench run and its worker child exchange over Node's IPC channel. Times are
 * readings of the shared monotonic clock (see clock.ts), so the parent can compare them with its own.
 */
export interface WorkerConfig {
  redisUrl: string;
  /** Stream key, channel or queue name the worker consumes. */
  key: string;
  group: string;
  /** Record emit→handler latency of every message (light-load scenario). */
  recordLatency: boolean;
  /** Implementation-specific knobs (prefetch, concurrency, ...). */
  options?: Record<string, number | string | boolean>;
}

export type ParentMessage =
  | { type: 'go' }
  | { type: 'waitFor'; count: number }
  | { type: 'stats' }
  | { type: 'stop' };

export interface WorkerStats {
  count: number;
  firstAt: number;
  lastAt: number;
  latency: LatencySummary;
  rssKb: number;
  maxRssKb: number;
  /** process.cpuUsage() of the worker so far, user + system, in ms. */
  cpuMs: number;
}

export type ChildMessage =
  | { type: 'ready'; rssKb: number }
  | { type: 'started'; at: number }
  | { type: 'reached'; count: number; at: number }
  | ({ type: 'stats' } & WorkerStats)
  | { type: 'stopped'; maxRssKb: number }
  | { type: 'result'; result: Record<string, number> }
  | { type: 'failed'; message: string };
