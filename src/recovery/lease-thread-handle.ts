import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '@nestjs/common';
import type { RedisConnection } from '../redis/connection.js';
import { threadConnectionOf } from '../redis/thread-connection.js';
import type { LostLease } from './leases.js';
import { heartbeatInterval, type FromLeaseThread, type HeldEntries, type LeaseThreadData, type ToLeaseThread } from './lease-thread-protocol.js';

export interface LeaseThreadSettings {
  readonly connection: RedisConnection | undefined;
  readonly connectTimeout: number;
  readonly consumer: string;
  readonly interval: number;
  readonly maxBlocked: number;
}

/** What the lease keeper hears from its thread (on the main thread's event loop). */
export interface LeaseThreadEvents {
  /** The thread renews from now on: send it what is held. */
  ready(): void;
  renewed(count: number): void;
  lost(stream: string, group: string, leases: LostLease[]): void;
  error(error: Error): void;
  /** The thread no longer renews (it failed or died): the keeper renews on the event loop again. */
  gone(): void;
}

/** How long `stop()` lets the thread finish its renewal and close its connection before terminating it. */
const STOP_GRACE_MS = 3_000;

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
 * connection option, stamps the heartbeat it watches, and passes messages both ways. Whatever
 * keeps the thread from renewing (an option a thread cannot receive, a connection it cannot
 * make, its death) is logged once, and the keeper renews on the event loop as it did before.
 */
export class LeaseThread {
  private worker: Worker | undefined;
  private ready = false;
  private stopping = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private readonly heartbeat = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT);
  private readonly stamp = new Float64Array(this.heartbeat);
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: LeaseThreadSettings,
    private readonly logger: Logger,
    private readonly events: LeaseThreadEvents,
  ) {}

  /** Whether the thread renews now (else the keeper does, on the event loop). */
  get renewing(): boolean {
    return this.ready;
  }

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
    const { consumer, interval, maxBlocked, connectTimeout } = this.settings;
    const data: LeaseThreadData = { connection: thread.connection, connectTimeout, consumer, interval, maxBlocked, heartbeat: this.heartbeat };
    let worker: Worker;
    try {
      worker = new Worker(script, { workerData: data, name: 'nestjs-redis-streams lease thread' });
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
    this.heartbeatTimer = setInterval(() => (this.stamp[0] = Date.now()), heartbeatInterval(maxBlocked));
    this.heartbeatTimer.unref();
    return true;
  }

  /** What this process holds now (each lease interval, and when the thread becomes ready): the thread renews it at once. */
  held(snapshot: HeldEntries[]): void {
    if (this.ready) this.post({ type: 'held', held: snapshot });
  }

  /** Entries just admitted: known to the thread before their handlers can block the loop. */
  admitted(stream: string, group: string, ids: string[]): void {
    if (this.worker !== undefined && !this.stopping) this.post({ type: 'started', stream, group, ids });
  }

  /** Stops the thread: it finishes a renewal in progress, closes its connection and ends (terminated if it takes too long). */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined || this.stopping) return this.exited;
    this.stopping = true;
    this.ready = false;
    clearInterval(this.heartbeatTimer);
    this.post({ type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_GRACE_MS)));
    if ((await Promise.race([this.exited, late])) === 'late') await worker.terminate();
    clearTimeout(timer);
    await this.exited;
  }

  private post(message: ToLeaseThread): void {
    this.worker?.postMessage(message);
  }

  private readonly onMessage = (message: FromLeaseThread): void => {
    switch (message.type) {
      case 'ready':
        if (this.stopping) return;
        this.ready = true;
          this.events.ready();
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
        return;
    }
  };

  /** The thread stopped renewing for good (not asked to): said once, and the keeper takes over. */
  private fail(why: string): void {
    if (this.stopping || this.worker === undefined) return;
    const worker = this.worker;
    this.worker = undefined;
    this.ready = false;
    clearInterval(this.heartbeatTimer);
    this.logger.warn(`the lease thread stopped (${why}): leases are renewed on the event loop from now on`);
    void worker.terminate();
    this.events.gone();
  }
}
