import type { Redis } from 'ioredis';
import type { RedisStreamsCapabilities } from '../src/redis/capabilities.js';
import type { RedisServerProcess } from '../test/helpers/redis-server.js';
import type { BenchConfig } from './config.js';
import { median } from './stats.js';

/** What one run of one contender measured. Absent metrics do not apply to the scenario. */
export interface RunResult {
  msgsPerSec?: number;
  /**
   * The rate over the second half of the entries (consume): what a worker that runs for long does,
   * without its start (connections, `listen()`, the JIT's warm-up), which a fresh process pays in
   * the first half.
   */
  steadyMsgsPerSec?: number;
  p50Ms?: number;
  p99Ms?: number;
  /** The largest latency of the run, ms (delayed-wake: the latest entry after its due time). */
  maxMs?: number;
  /** Peak resident set of the process under test, MB. */
  peakRssMb?: number;
  /** Peak RSS minus RSS just before the measured work, MB. */
  rssGrowthMb?: number;
  /** Redis memory per entry kept, bytes (delayed-memory). */
  bytesPerEntry?: number;
  /**
   * The worker's CPU (user + system) per entry handled, µs: what a shared host does not distort
   * (it slows the clock, not this). Start-up after `go` included.
   */
  cpuUsPerEntry?: number;
  /** The same over the second half of the entries (consume): start-up (`listen()`, connections, the JIT) left out, acks of the last entries too. */
  steadyCpuUsPerEntry?: number;
  /** Anything else worth keeping in the JSON (acked rate, counts...). */
  extra?: Record<string, number>;
}

export type Metric = Exclude<keyof RunResult, 'extra'>;
export const METRICS: readonly Metric[] = ['msgsPerSec', 'steadyMsgsPerSec', 'p50Ms', 'p99Ms', 'maxMs', 'peakRssMb', 'rssGrowthMb', 'bytesPerEntry', 'cpuUsPerEntry', 'steadyCpuUsPerEntry'];

export interface BenchContext {
  config: BenchConfig;
  server: RedisServerProcess;
  /** Admin connection for setup, checks and cleanup (never the connection under test). */
  admin: Redis;
  /** What the bench's redis-server supports (probed once, as the transport probes it). */
  capabilities: RedisStreamsCapabilities;
  log: (line: string) => void;
}

/** One implementation taking part in a scenario. */
export interface Contender {
  /** `streams` (ours), `raw`, `nest-redis`, `bullmq`. */
  impl: string;
  label: string;
  setup?(): Promise<void>;
  /** One run; `round` counts warm-ups too (so keys can be unique per run). */
  run(round: number): Promise<RunResult>;
  teardown?(): Promise<void>;
  /** Why the contender cannot run (e.g. our piece has not landed yet). */
  unavailable?: string;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  impl: string;
  label: string;
  /** The contender whose numbers the ratio column divides by (the raw baseline, or the named peer). */
  reference: string;
  median: RunResult;
  runs: RunResult[];
  error?: string;
}

export interface Scenario {
  id: string;
  title: string;
  /** The impl the ratio column compares with. */
  reference: string;
  contenders(ctx: BenchContext): Contender[];
  /** Shared setup and teardown (fill a stream once for every contender...). */
  setup?(ctx: BenchContext): Promise<void>;
  teardown?(ctx: BenchContext): Promise<void>;
  /** Why this scenario cannot run on this server (a missing capability): printed, and not a failure. */
  skip?(ctx: BenchContext): string | undefined;
  /** Overrides of the global run counts (the 1M backlog is too costly to repeat 4 times). */
  runs?: (config: BenchConfig) => { warmups: number; runs: number };
  /**
   * The Redis servers each run is charged with (CPU from `INFO cpu`, commands from `INFO
   * commandstats`), asked for after `setup`: by default the bench's server (`ctx.admin`). A
   * scenario on servers of its own (a cluster) gives one connection per node; with several, the
   * sums are kept and each node's figures too (`node1.redisCpuMs`, `node1.calls.xadd`, ...).
   */
  measuredNodes?(ctx: BenchContext): readonly Redis[];
  /** Left out of the default run (slow or heavy): runs only when `--only` names it. */
  optIn?: boolean;
}

/**
 * Runs every contender `warmups + runs` times, interleaved (A B C, A B C, ...) so that drift of a
 * shared machine hits all contenders alike, and keeps the median of each metric of the measured runs.
 */
export async function runScenario(scenario: Scenario, ctx: BenchContext): Promise<ScenarioResult[]> {
  const { warmups, runs } = scenario.runs?.(ctx.config) ?? ctx.config;
  const { impls } = ctx.config;
  const contenders = scenario.contenders(ctx).filter((contender) => impls.length === 0 || impls.includes(contender.impl));
  const results = new Map<Contender, { runs: RunResult[]; error?: string }>();
  for (const contender of contenders) {
    results.set(contender, contender.unavailable ? { runs: [], error: contender.unavailable } : { runs: [] });
  }
  await scenario.setup?.(ctx);
  try {
    const nodes = scenario.measuredNodes?.(ctx) ?? [ctx.admin];
    for (const contender of contenders) {
      const state = results.get(contender)!;
      if (state.error) continue;
      try {
        await contender.setup?.();
      } catch (error) {
        state.error = describeError(error);
      }
    }
    for (let round = 0; round < warmups + runs; round++) {
      for (const contender of contenders) {
        const state = results.get(contender)!;
        if (state.error) continue;
        try {
          // Redis' own count of the commands each run sent (round trips are what a 2-core box pays for).
          const cpuBefore = await Promise.all(nodes.map(startUsage));
          const result = await contender.run(round);
          // Redis' CPU for the run: on a 2-core box it competes with the producer and the worker.
          const usage = await usageSince(nodes, cpuBefore);
          result.extra = { ...result.extra, ...usage };
          const tag = round < warmups ? 'warm-up' : `run ${round - warmups + 1}/${runs}`;
          ctx.log(`  ${scenario.id} ${contender.label} ${tag}: ${formatRun(result)}${nodes.length > 1 ? `; ${formatNodeCpu(usage, nodes.length)}` : ''}`);
          if (round >= warmups) state.runs.push(result);
        } catch (error) {
          state.error = describeError(error);
          ctx.log(`  ${scenario.id} ${contender.label} FAILED: ${state.error}`);
        }
      }
    }
  } finally {
    for (const contender of contenders) {
      await contender.teardown?.().catch((error: unknown) => ctx.log(`  teardown of ${contender.label}: ${describeError(error)}`));
    }
    await scenario.teardown?.(ctx);
  }
  return contenders.map((contender) => {
    const state = results.get(contender)!;
    return {
      scenario: scenario.id,
      title: scenario.title,
      impl: contender.impl,
      label: contender.label,
      reference: scenario.reference,
      median: medianOf(state.runs),
      runs: state.runs,
      ...(state.error ? { error: state.error } : {}),
    };
  });
}

/** Resets the node's command counts; its CPU seconds so far. */
async function startUsage(node: Redis): Promise<number> {
  await node.config('RESETSTAT');
  return redisCpuSeconds(await node.info('cpu'));
}

/** CPU (ms) and command counts of every node since `startUsage`, summed, and per node when there are several. */
async function usageSince(nodes: readonly Redis[], cpuBefore: readonly number[]): Promise<Record<string, number>> {
  const usage: Record<string, number> = {};
  const add = (key: string, value: number) => (usage[key] = (usage[key] ?? 0) + value);
  for (const [index, node] of nodes.entries()) {
    const figures = {
      redisCpuMs: (redisCpuSeconds(await node.info('cpu')) - (cpuBefore[index] as number)) * 1000,
      ...commandCounts(await node.info('commandstats')),
    };
    for (const [key, value] of Object.entries(figures)) {
      add(key, value);
      if (nodes.length > 1) usage[`node${index + 1}.${key}`] = value;
    }
  }
  return usage;
}

function formatNodeCpu(usage: Record<string, number>, nodes: number): string {
  const perNode = Array.from({ length: nodes }, (_, index) => Math.round(usage[`node${index + 1}.redisCpuMs`] ?? 0));
  return `Redis CPU per node ${perNode.join(' / ')} ms`;
}

/** `INFO cpu` → the server's user + system CPU seconds (main thread and the rest). */
export function redisCpuSeconds(info: string): number {
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/** `INFO commandstats` → `{ 'calls.xack': n, ... }` for the commands that carry the work. */
export function commandCounts(info: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) {
    const command = match[1] as string;
    if (/^(x|evalsha|eval|publish|subscribe|fcall|lpush|rpush|lmove|brpoplpush|bzpopmin|zadd|multi|exec|hset)/.test(command)) {
      counts[`calls.${command}`] = Number(match[2]);
    }
  }
  return counts;
}

function medianOf(runs: RunResult[]): RunResult {
  const out: RunResult = {};
  for (const metric of METRICS) {
    const values = runs.map((run) => run[metric]).filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
    if (values.length > 0) out[metric] = median(values);
  }
  const extraKeys = new Set(runs.flatMap((run) => Object.keys(run.extra ?? {})));
  if (extraKeys.size > 0) {
    out.extra = {};
    for (const key of extraKeys) {
      out.extra[key] = median(runs.map((run) => run.extra?.[key]).filter((value): value is number => typeof value === 'number'));
    }
  }
  return out;
}

export function formatRun(result: RunResult): string {
  const parts: string[] = [];
  if (result.msgsPerSec !== undefined) parts.push(`${Math.round(result.msgsPerSec)} msg/s`);
  if (result.steadyMsgsPerSec !== undefined) parts.push(`second half ${Math.round(result.steadyMsgsPerSec)} msg/s`);
  if (result.p50Ms !== undefined) parts.push(`p50 ${result.p50Ms.toFixed(2)} ms`);
  if (result.p99Ms !== undefined) parts.push(`p99 ${result.p99Ms.toFixed(2)} ms`);
  if (result.maxMs !== undefined) parts.push(`max ${result.maxMs.toFixed(2)} ms`);
  if (result.cpuUsPerEntry !== undefined) parts.push(`worker CPU ${result.cpuUsPerEntry.toFixed(2)} µs/entry`);
  if (result.steadyCpuUsPerEntry !== undefined) parts.push(`second half ${result.steadyCpuUsPerEntry.toFixed(2)} µs/entry`);
  if (result.peakRssMb !== undefined) parts.push(`peak RSS ${result.peakRssMb.toFixed(1)} MB`);
  if (result.rssGrowthMb !== undefined) parts.push(`RSS growth ${result.rssGrowthMb.toFixed(1)} MB`);
  if (result.bytesPerEntry !== undefined) parts.push(`${result.bytesPerEntry.toFixed(1)} B/entry`);
  return parts.join(', ');
}

export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n').slice(0, 3).join(' | ');
}
