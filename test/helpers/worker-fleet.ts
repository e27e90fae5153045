import { spawn, type ChildProcess } from 'node:child_process';
import { compiledPath } from './compiled.js';

const WORKER = compiledPath('test/fixtures/recovery-worker.ts');

export interface FleetWorker {
  readonly child: ChildProcess;
  readonly consumer: string;
  /** Resolves when the process exited (any way). */
  readonly exited: Promise<void>;
}

/**
 * Worker processes (test/fixtures/recovery-worker.ts, compiled) for fault tests: spawn, wait for
 * `ready`, SIGKILL at will, and optionally respawn every worker that dies (a crash loop under a
 * supervisor). Each process gets a fresh consumer name unless the config names one.
 */
export class WorkerFleet {
  readonly workers = new Set<FleetWorker>();
  /** Consumers of every worker ever started, in start order. */
  readonly started: string[] = [];
  private respawning = false;
  private stopped = false;
  private readonly respawns = new Set<Promise<unknown>>();

  constructor(private readonly config: Record<string, unknown>) {}

  async spawn(overrides: Record<string, unknown> = {}): Promise<FleetWorker> {
    const child = spawn(process.execPath, [WORKER], {
      env: { ...process.env, WORKER_CONFIG: JSON.stringify({ ...this.config, ...overrides }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const consumer = await new Promise<string>((resolve, reject) => {
      let out = '';
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        const match = /ready (\S+)\n/.exec(out);
        if (match) {
          child.stdout?.off('data', onData);
          resolve(match[1] as string);
        }
      };
      child.stdout?.on('data', onData);
      child.once('exit', (code, signal) => reject(new Error(`worker exited before ready (${code ?? signal}): ${stderr}`)));
    });
    child.stdout?.resume();
    const worker: FleetWorker = { child, consumer, exited };
    this.workers.add(worker);
    this.started.push(consumer);
    void exited.then(() => {
      this.workers.delete(worker);
      if (this.respawning && !this.stopped) {
        const next = this.spawn(overrides).catch(() => undefined);
        this.respawns.add(next);
        void next.finally(() => this.respawns.delete(next));
      }
    });
    return worker;
  }

  /** Every worker that dies is replaced by a new one (with a new consumer name). */
  respawnOnExit(on = true): void {
    this.respawning = on;
  }

  /** SIGKILLs one running worker (a random one by default) and waits for it to be gone. */
  async kill(worker?: FleetWorker): Promise<FleetWorker | undefined> {
    const list = [...this.workers];
    const victim = worker ?? list[Math.floor(Math.random() * list.length)];
    if (victim === undefined) return undefined;
    victim.child.kill('SIGKILL');
    await victim.exited;
    return victim;
  }

  /** Kills every worker (no respawn) and waits until all are gone. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.respawns);
    await Promise.all([...this.workers].map((worker) => this.kill(worker)));
  }
}
