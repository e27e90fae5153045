import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import type { RedisConnection } from '../redis/connection.js';
import { threadConnectionOf } from '../redis/thread-connection.js';
import type { LostLease } from './leases.js';
import { connectsAtStart, heartbeatInterval, type FromLeaseThread, type LeaseThreadData, type ToLeaseThread } from './lease-thread-protocol.js';

export interface LeaseThreadSettings {
  readonly connection: RedisConnection | undefined;
  readonly connectTimeout: number;
  readonly consumer: string;
  /** The streams + groups this consumer reads: the thread lists its pending entries there. */
  readonly streams: ReadonlyArray<readonly [stream: string, group: string]>;
  readonly interval: number;
  readonly maxBlocked: number;
}

/** What the lease keeper hears from its thread (on the main thread's event loop). */
export interface LeaseThreadEvents {
  renewed(count: number): void;
  lost(stream: string, group: string, leases: LostLease[]): void;
  error(error: Error): void;
}

/** How long `stop()` lets the thread finish its renewal and close its connection before terminating it. */
const STOP_GRACE_MS = 3_000;

/**
 * The thread's V8 heap. It holds its modules, one connection and a page of pending ids (~10 MB
 * used, through renewals of 20k entries too); V8's defaults grew its young generation to 16 MB
 * semi-spaces and its old space freely: ~23 MB of RSS where ~15 MB do (docs/benchmarks.md, "Lease
 * thread"). Semi-spaces of 1 MB (3 MB young generation) and an old space capped at three times
 * what it uses; running out ends the thread like any other death (one warning, renewals on the
 * event loop).
 */
const THREAD_HEAP = { maxYoungGenerationSizeMb: 3, maxOldGenerationSizeMb: 32 } as const;

let scriptOverride: URL | undefined;

/**
 * @internal Tests run the compiled thread (build/) from TypeScript sources, which have none beside
 * them; `undefined` goes back to the file beside this module.
 */
export function setLeaseThreadScript(url: URL | undefined): void {
  scriptOverride = url;
}

/** The compiled lease-thread.js beside this module; none when running from TypeScript sources. */
function leaseThreadScript(): URL | undefined {
  if (scriptOverride !== undefined) return scriptOverride;
  const url = new URL('./lease-thread.js', import.meta.url);
  return existsSync(fileURLToPath(url)) ? url : undefined;
}

/**
 * The main thread's side of the lease thread (lease-thread.ts): starts it with the server's
 * connection option and the streams + groups it reads, stamps the heartbeat it watches (its only
 * cost while the event loop is live), asks it once to connect ahead of a block, and hears what it
 * renewed. Whatever keeps the thread from
 * running (an option a thread cannot receive, a connection it cannot make, its death) is logged
 * once; the keeper renews on the event loop in every case, as with the thread off.
 */
export class LeaseThread {
  private worker: Worker | undefined;
  private stopping = false;
  private askedToConnect = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private readonly heartbeat = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT);
  private readonly stamp = new Float64Array(this.heartbeat);
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: LeaseThreadSettings,
    private readonly logger: Logger,
    private readonly events: LeaseThreadEvents,
  ) {}

  /** Starts the thread; false (logged) when it cannot run here. */
  start(): boolean {
    const script = leaseThreadScript();
    if (script === undefined) {
      this.logger.debug?.('lease renewal runs on the event loop: no compiled lease-thread.js beside this module (running from TypeScript sources)');
      return false;
    }
    const thread = threadConnectionOf(this.settings.connection);
    if ('unavailable' in thread) {
      this.logger.warn(`lease renewal runs on the event loop: ${thread.unavailable} (docs/recovery.md, "Leases")`);
      return false;
    }
    this.stamp[0] = Date.now();
    const { consumer, streams, interval, maxBlocked, connectTimeout } = this.settings;
    const data: LeaseThreadData = { connection: thread.connection, connectTimeout, consumer, streams, interval, maxBlocked, heartbeat: this.heartbeat };
    let worker: Worker;
    try {
      worker = new Worker(script, { workerData: data, name: 'nestjs-redis-streams lease thread', resourceLimits: THREAD_HEAP });
    } catch (error) {
      this.logger.warn(`lease renewal runs on the event loop: the lease thread did not start (${(error as Error).message})`);
      return false;
    }
    this.worker = worker;
    // A server never closed must not keep the process alive for its leases.
    worker.unref();
    worker.on('message', this.onMessage);
    worker.on('error', (error) => this.fail(`it threw ${error.message}`));
    this.exited = new Promise((resolve) =>
      worker.once('exit', (code) => {
        this.fail(`it exited (code ${code})`);
        resolve();
      }),
    );
    this.heartbeatTimer = setInterval(() => (this.stamp[0] = Date.now()), heartbeatInterval(interval, maxBlocked));
    this.heartbeatTimer.unref();
    return true;
  }

  /** Stops the thread: it finishes a renewal in progress, closes its connection and ends (terminated if it takes too long). */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined || this.stopping) return this.exited;
    this.stopping = true;
    clearInterval(this.heartbeatTimer);
    this.post({ type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_GRACE_MS)));
    if ((await Promise.race([this.exited, late])) === 'late') await worker.terminate();
    clearTimeout(timer);
    await this.exited;
  }

  /** Whether `connectAhead()` would still tell the thread anything: it runs, connects at its first need (not at start) and was not told yet. */
  get awaitsConnectAhead(): boolean {
    return this.worker !== undefined && !this.stopping && !this.askedToConnect && !connectsAtStart(this.settings.interval);
  }

  /**
   * Tells the thread to connect now, once (an entry has been in flight for a lease interval: its
   * handler may block next), so a block finds it connected.
   */
  connectAhead(): void {
    if (!this.awaitsConnectAhead) return;
    this.askedToConnect = true;
    this.post({ type: 'connect' });
  }

  private post(message: ToLeaseThread): void {
    this.worker?.postMessage(message);
  }

  private readonly onMessage = (message: FromLeaseThread): void => {
    switch (message.type) {
      case 'ready':
        return;
      case 'renewed':
        this.events.renewed(message.count);
        return;
      case 'lost':
        this.events.lost(message.stream, message.group, message.leases);
        return;
      case 'error':
        this.events.error(new Error(message.message));
        return;
      case 'failed':
        this.fail(`its connection could not be made: ${message.message}`);
        return;
      case 'gaveUp':
        this.logger.warn(
          `the event loop did not answer for ${message.blockedMs} ms, over recovery.leases.maxBlocked (${this.settings.maxBlocked} ms): ` +
            `the lease thread stopped renewing ${message.entries} entries, which other workers may take and run again`,
        );
        return;
      case 'stopped':
        // Done: its connection is dropped. Ended here rather than waiting for it to exit, which a
        // socket half-closed towards a Redis that does not answer holds up until STOP_GRACE_MS.
        void this.worker?.terminate();
        return;
    }
  };

  /** The thread stopped for good (not asked to): said once; the keeper goes on renewing on the event loop. */
  private fail(why: string): void {
    if (this.stopping || this.worker === undefined) return;
    const worker = this.worker;
    this.worker = undefined;
    clearInterval(this.heartbeatTimer);
    this.logger.warn(`the lease thread stopped (${why}): leases are renewed on the event loop only from now on, and lapse while it is blocked`);
    void worker.terminate();
  }
}
