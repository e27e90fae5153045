import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ParentMessage, WorkerConfig, WorkerStats } from './protocol.js';

/** Where --cpu-prof output of worker children goes, when profiling was asked for. */
export function profileDir(): string | undefined {
  return process.env.BENCH_CPU_PROF_DIR || undefined;
}

/**
 * Extra Node/V8 flags for every worker child, space-separated: `BENCH_WORKER_ARGS='--trace-gc-nvp'`
 * (young-generation survivors per scavenge, docs/benchmarks.md "GC survivors"), `--max-semi-space-size=8`.
 */
export function workerNodeArgs(): string[] {
  return (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter((arg) => arg !== '');
}

type Waiter = { type: ChildMessage['type']; resolve: (message: ChildMessage) => void; reject: (error: Error) => void };

/**
 * A worker child process (one of bench/workers/*.js) driven over IPC. Every scenario run gets a
 * fresh child, so no run inherits another's memory or state.
 */
export class WorkerProcess {
  private readonly waiters: Waiter[] = [];
  private exited = false;
  private failure?: Error;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (message: ChildMessage) => this.dispatch(message));
    child.on('exit', (code, signal) => {
      this.exited = true;
      const error = this.failure ?? new Error(`worker ${name} exited (code ${code}, signal ${signal})`);
      for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    });
  }

  /** Forks `bench/workers/<script>.js` and waits until it says it is ready. */
  static async spawn(script: string, config: WorkerConfig, { timeoutMs = 60_000 } = {}): Promise<WorkerProcess> {
    const worker = WorkerProcess.fork(script, config);
    await worker.expect('ready', timeoutMs);
    return worker;
  }

  /** Runs a one-shot child to completion and returns what it reported. */
  static async runOnce(script: string, config: WorkerConfig, timeoutMs: number): Promise<Record<string, number>> {
    const worker = WorkerProcess.fork(script, config);
    try {
      return await worker.result(timeoutMs);
    } finally {
      await worker.exitWithin(5_000);
    }
  }

  /** Lets a one-shot child exit on its own (it writes its --cpu-prof profile then); kills it past `ms`. */
  private async exitWithin(ms: number): Promise<void> {
    if (this.exited) return;
    const exit = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exit, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
    if (!this.exited) {
      this.child.kill('SIGKILL');
      await exit;
    }
  }

  private static fork(script: string, config: WorkerConfig): WorkerProcess {
    const path = fileURLToPath(new URL(`./workers/${script}.js`, import.meta.url));
    const dir = profileDir();
    const child = fork(path, [JSON.stringify(config)], {
      execArgv: [
        ...(dir ? ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `${script}-${Date.now()}-${process.pid}.cpuprofile`] : []),
        ...workerNodeArgs(),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    return new WorkerProcess(script, child);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Starts consuming; resolves with the clock reading taken just before the start. */
  async go(timeoutMs = 60_000): Promise<number> {
    const reply = this.request({ type: 'go' }, 'started', timeoutMs);
    return ((await reply) as { at: number }).at;
  }

  /** Resolves with the time the handler saw its `count`-th message. */
  async waitFor(count: number, timeoutMs: number): Promise<number> {
    const reply = await this.request({ type: 'waitFor', count }, 'reached', timeoutMs);
    return (reply as { at: number }).at;
  }

  async stats(timeoutMs = 30_000): Promise<WorkerStats> {
    return (await this.request({ type: 'stats' }, 'stats', timeoutMs)) as unknown as WorkerStats;
  }

  /** A worker-specific operation (`BenchWorker.call`); one at a time per worker (replies are matched by type). */
  async call(op: string, arg?: string, timeoutMs = 30_000): Promise<Record<string, number>> {
    const reply = await this.request({ type: 'call', op, ...(arg === undefined ? {} : { arg }) }, 'called', timeoutMs);
    return (reply as { result: Record<string, number> }).result;
  }

  /** Peak resident set (kB) the kernel recorded for the child so far (VmHWM). */
  peakRssKb(): number {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const match = /VmHWM:\s+(\d+)\s+kB/.exec(status);
      return match ? Number(match[1]) : Number.NaN;
    } catch {
      return Number.NaN;
    }
  }

  /** Asks the worker to close and exit; kills it if it does not within the timeout. */
  async stop(timeoutMs = 15_000): Promise<{ maxRssKb: number }> {
    if (this.exited) return { maxRssKb: Number.NaN };
    const exit = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    try {
      const reply = await this.request({ type: 'stop' }, 'stopped', timeoutMs);
      await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, timeoutMs))]);
      return { maxRssKb: (reply as { maxRssKb: number }).maxRssKb };
    } finally {
      if (!this.exited) {
        this.child.kill('SIGKILL');
        await exit;
      }
    }
  }

  /** For one-shot children (workers that do one job and exit): their result message. */
  async result(timeoutMs: number): Promise<Record<string, number>> {
    return ((await this.expect('result', timeoutMs)) as { result: Record<string, number> }).result;
  }

  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  private request(message: ParentMessage, replyType: ChildMessage['type'], timeoutMs: number): Promise<ChildMessage> {
    const reply = this.expect(replyType, timeoutMs);
    this.child.send(message);
    return reply;
  }

  private expect(type: ChildMessage['type'], timeoutMs: number): Promise<ChildMessage> {
    if (this.exited) return Promise.reject(this.failure ?? new Error(`worker ${this.name} has exited`));
    return new Promise<ChildMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new Error(`worker ${this.name}: no '${type}' within ${timeoutMs} ms`));
      }, timeoutMs);
      const waiter: Waiter = {
        type,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.waiters.push(waiter);
    });
  }

  private dispatch(message: ChildMessage): void {
    if (message.type === 'failed') {
      this.failure = new Error(`worker ${this.name} failed: ${message.message}`);
      for (const waiter of this.waiters.splice(0)) waiter.reject(this.failure);
      return;
    }
    const index = this.waiters.findIndex((waiter) => waiter.type === message.type);
    if (index < 0) return;
    const [waiter] = this.waiters.splice(index, 1);
    waiter?.resolve(message);
  }
}
