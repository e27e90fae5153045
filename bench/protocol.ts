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
  | { type: 'stop' }
  /** A worker-specific operation (flow-pause: `pause`, `resume`, `starts`...), answered by `called`. */
  | { type: 'call'; op: string; arg?: string };

export interface WorkerStats {
  count: number;
  firstAt: number;
  lastAt: number;
  /** When the handler saw half of the awaited count (0 when nothing was awaited). */
  halfAt: number;
  /** The worker's CPU (ms, as `cpuMs`) when the handler saw its first message, half of the awaited count, and all of it (0 before). */
  firstCpuMs: number;
  halfCpuMs: number;
  lastCpuMs: number;
  latency: LatencySummary;
  rssKb: number;
  maxRssKb: number;
  /** process.cpuUsage() of the worker so far, user + system, in ms. */
  cpuMs: number;
  /** The user and system parts of `cpuMs` (system: mostly socket reads and writes). */
  cpuUserMs: number;
  cpuSystemMs: number;
  /** Where the worker's memory is now: V8's heap spaces (committed), buffers outside the heap. */
  memory: WorkerMemory;
}

export interface WorkerMemory {
  /** Young generation (semi-spaces): V8 grows it while many objects survive a scavenge. */
  newSpaceKb: number;
  oldSpaceKb: number;
  /** Code, maps, large objects and the rest of V8's heap. */
  otherHeapKb: number;
  /** Buffers and other memory outside V8's heap (`external`). */
  externalKb: number;
}

export type ChildMessage =
  | { type: 'ready'; rssKb: number }
  | { type: 'started'; at: number }
  | { type: 'reached'; count: number; at: number }
  | ({ type: 'stats' } & WorkerStats)
  | { type: 'stopped'; maxRssKb: number }
  | { type: 'result'; result: Record<string, number> }
  | { type: 'called'; op: string; result: Record<string, number> }
  | { type: 'failed'; message: string };
