import { nowNs } from '../clock.js';
import { ageNs } from '../payload.js';
import { getHeapSpaceStatistics } from 'node:v8';
import type { ChildMessage, ParentMessage, WorkerConfig, WorkerMemory } from '../protocol.js';
import { LatencyRecorder } from '../stats.js';

/** What a handler calls for every message it gets: counts it and, if asked, records its latency. */
export class Probe {
  count = 0;
  firstAt = 0;
  lastAt = 0;
  /** When the count reached half of the awaited count: the rate from here to the end leaves the start-up out. */
  halfAt = 0;
  /** The process's CPU (user + system, ms) at the first message, when the count reached half, and when it reached the awaited count. */
  firstCpuMs = 0;
  halfCpuMs = 0;
  lastCpuMs = 0;
  private target = Number.POSITIVE_INFINITY;
  private half = Number.POSITIVE_INFINITY;
  readonly latencies = new LatencyRecorder();

  constructor(private readonly recordLatency: boolean) {}

  onMessage(payload: unknown): void {
    if (this.recordLatency) this.latencies.record(ageNs(payload));
    this.count++;
    if (this.count === 1) {
      this.firstAt = nowNs();
      this.firstCpuMs = cpu().cpuMs;
    }
    if (this.count === this.half) {
      this.halfAt = nowNs();
      this.halfCpuMs = cpu().cpuMs;
    }
    if (this.count >= this.target) {
      this.lastAt = nowNs();
      this.lastCpuMs = cpu().cpuMs;
      this.target = Number.POSITIVE_INFINITY;
      send({ type: 'reached', count: this.count, at: this.lastAt });
    }
  }

  waitFor(count: number): void {
    if (this.count >= count) {
      send({ type: 'reached', count: this.count, at: this.lastAt || nowNs() });
    } else {
      this.target = count;
      this.half = Math.max(1, Math.floor(count / 2));
    }
  }
}

/** One consumer under test, living in this child process. */
export interface BenchWorker {
  /** Start consuming (after `ready` for most scenarios; on `go` when the start itself is timed). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Operations of this worker beyond the common ones (`WorkerProcess.call`); clock readings as numbers. */
  call?(op: string, arg: string | undefined): Promise<Record<string, number>>;
}

export function workerConfig(): WorkerConfig {
  const raw = process.argv[2];
  if (!raw) throw new Error('worker config (JSON) expected as the first argument');
  return JSON.parse(raw) as WorkerConfig;
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

function cpu(): { cpuMs: number; cpuUserMs: number; cpuSystemMs: number } {
  const { user, system } = process.cpuUsage();
  return { cpuMs: (user + system) / 1000, cpuUserMs: user / 1000, cpuSystemMs: system / 1000 };
}

function memory(): WorkerMemory {
  let newSpace = 0;
  let oldSpace = 0;
  let other = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === 'new_space') newSpace += space.space_size;
    else if (space.space_name === 'old_space') oldSpace += space.space_size;
    else other += space.space_size;
  }
  const kb = (bytes: number) => Math.round(bytes / 1024);
  return { newSpaceKb: kb(newSpace), oldSpaceKb: kb(oldSpace), otherHeapKb: kb(other), externalKb: kb(process.memoryUsage().external) };
}

function rssKb(): number {
  return Math.round(process.memoryUsage.rss() / 1024);
}

/**
 * Runs a worker under the parent's control: builds it, says `ready`, starts it on `go`, answers
 * `waitFor` / `stats`, and on `stop` closes it and exits (so --cpu-prof profiles get written).
 */
export async function serveWorker(build: (probe: Probe, config: WorkerConfig) => Promise<BenchWorker>): Promise<void> {
  const config = workerConfig();
  const probe = new Probe(config.recordLatency);
  let worker: BenchWorker;
  try {
    worker = await build(probe, config);
  } catch (error) {
    send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
    process.exit(1);
  }
  process.on('message', (message: ParentMessage) => {
    void handle(message).catch((error: unknown) => {
      send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
    });
  });
  const handle = async (message: ParentMessage): Promise<void> => {
    switch (message.type) {
      case 'go': {
        const at = nowNs();
        await worker.start();
        send({ type: 'started', at });
        return;
      }
      case 'waitFor':
        probe.waitFor(message.count);
        return;
      case 'stats':
        send({
          type: 'stats',
          count: probe.count,
          firstAt: probe.firstAt,
          lastAt: probe.lastAt,
          halfAt: probe.halfAt,
          firstCpuMs: probe.firstCpuMs,
          halfCpuMs: probe.halfCpuMs,
          lastCpuMs: probe.lastCpuMs,
          latency: probe.latencies.drain(),
          rssKb: rssKb(),
          maxRssKb: process.resourceUsage().maxRSS,
          ...cpu(),
          memory: memory(),
        });
        return;
      case 'call': {
        if (worker.call === undefined) throw new Error(`this worker has no operation ${message.op}`);
        send({ type: 'called', op: message.op, result: await worker.call(message.op, message.arg) });
        return;
      }
      case 'stop':
        await worker.stop();
        send({ type: 'stopped', maxRssKb: process.resourceUsage().maxRSS });
        // Give the IPC message a moment to leave, then exit normally (writes --cpu-prof output).
        setTimeout(() => process.exit(0), 20);
        return;
    }
  };
  send({ type: 'ready', rssKb: rssKb() });
}

/** A child that does one measured job, reports its result and exits (claim scenarios). */
export async function runOnce(job: (config: WorkerConfig) => Promise<Record<string, number>>): Promise<void> {
  const config = workerConfig();
  try {
    const result = await job(config);
    send({ type: 'result', result });
    setTimeout(() => process.exit(0), 20);
  } catch (error) {
    send({ type: 'failed', message: String((error as Error)?.stack ?? error) });
    setTimeout(() => process.exit(1), 20);
  }
}

/** RSS now and the process's peak RSS so far, in kB. */
export function memoryKb(): { rssKb: number; maxRssKb: number } {
  return { rssKb: rssKb(), maxRssKb: process.resourceUsage().maxRSS };
}
