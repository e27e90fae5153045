import { errorMessage } from '../error-message.js';
import type { RedisClient } from '../redis/connection.js';
import { permitKeys, type PermitKeys } from './flow-keys.js';
import type { ResolvedGlobalConcurrency } from './flow-options.js';
import { flowScripts } from './scripts/loader.js';

/**
 * One worker's share of a handler's `extras.globalConcurrency` (permits.lua): permits taken before
 * a read, one per entry read, given back as the entries settle (summed per event-loop turn, one
 * call for all). While it holds any, the worker renews its lease every third of it; a worker that
 * dies stops renewing and its permits come back to the group when the lease runs out.
 */
export class GlobalPermits {
  private readonly keys: PermitKeys;
  private held = 0;
  private releasing = 0;
  private flushQueued = false;
  private renewTimer: NodeJS.Timeout | undefined;
  private lastRelease: Promise<void> = Promise.resolve();
  private readonly freed = new Set<() => void>();
  /** Permits held by all workers at this worker's last acquire: whether they are scarce (taken as scarce before the first). */
  private heldByAll = Number.POSITIVE_INFINITY;

  constructor(
    private readonly redis: RedisClient,
    stream: string,
    group: string,
    private readonly worker: string,
    readonly limit: ResolvedGlobalConcurrency,
    private readonly warn: (message: string) => void,
  ) {
    this.keys = permitKeys(stream, group);
  }

  /** Takes up to `wanted` free permits; resolves how many it got (0: all are held elsewhere). */
  async acquire(wanted: number): Promise<number> {
    if (wanted <= 0) return 0;
    const { holders, leases } = this.keys;
    const [granted, heldByAll] = await flowScripts(this.redis).nrsPermits(holders, leases, 'acquire', this.worker, wanted, this.limit.max, this.limit.leaseMs);
    const count = Number(granted);
    this.heldByAll = Number(heldByAll);
    this.held += count;
    if (this.held > 0) this.renewWhileHeld();
    return count;
  }

  /** Gives back `count` permits, in one call with the others released this turn. */
  release(count: number): void {
    const giving = Math.min(count, this.held - this.releasing);
    if (giving <= 0) return;
    this.releasing += giving;
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.lastRelease = this.flush();
    });
  }

  /**
   * How many more permits this worker may ask for. While they are scarce (half or more held at its
   * last acquire) no more than its handlers can run (`concurrency`): held beyond that they would
   * only wait here while other workers idle. While they are plenty, one read more (`readBatch`):
   * reads as large as without the limit, not cut to what is left under `concurrency`.
   */
  roomHere(concurrency: number, readBatch: number): number {
    const scarce = this.heldByAll * 2 >= this.limit.max;
    return Math.max(0, (scarce ? concurrency : concurrency + readBatch) - this.held);
  }

  /** Resolves at the next release of one of this worker's permits (a reader short of permits may ask again then). */
  whenReleased(): Promise<void> {
    return new Promise((resolve) => this.freed.add(resolve));
  }

  /** Gives back every permit still held and stops renewing. */
  async close(): Promise<void> {
    this.stopRenewing();
    this.releasing = this.held;
    await this.lastRelease;
    await this.flush();
    for (const wake of this.freed) wake();
    this.freed.clear();
  }

  private async flush(): Promise<void> {
    const count = this.releasing;
    if (count <= 0) return;
    this.releasing = 0;
    this.held -= count;
    if (this.held === 0) this.stopRenewing();
    try {
      const { holders, leases } = this.keys;
      await flowScripts(this.redis).nrsPermits(holders, leases, 'release', this.worker, count, this.limit.max, this.limit.leaseMs);
    } catch (error) {
      // Not given back: they return when this worker's lease runs out.
      this.warn(`could not give back ${count} global-concurrency permit(s): ${errorMessage(error)}; they return within ${this.limit.leaseMs} ms`);
    }
    const wake = [...this.freed];
    this.freed.clear();
    for (const resolve of wake) resolve();
  }

  private renewWhileHeld(): void {
    if (this.renewTimer !== undefined) return;
    this.renewTimer = setInterval(() => void this.renew(), Math.floor(this.limit.leaseMs / 3));
    this.renewTimer.unref();
  }

  private stopRenewing(): void {
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  private async renew(): Promise<void> {
    try {
      const { holders, leases } = this.keys;
      const [mine] = await flowScripts(this.redis).nrsPermits(holders, leases, 'renew', this.worker, 0, this.limit.max, this.limit.leaseMs);
      if (Number(mine) === 0 && this.held - this.releasing > 0) {
        this.warn(`the lease on ${this.held} global-concurrency permit(s) ran out before it was renewed; other workers may take them while these entries finish`);
        this.held = 0;
        this.releasing = 0;
        this.stopRenewing();
      }
    } catch (error) {
      this.warn(`could not renew the global-concurrency lease: ${errorMessage(error)}`);
    }
  }
}
