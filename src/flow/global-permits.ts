import { errorMessage } from '../error-message.js';
import type { RedisClient } from '../redis/connection.js';
import { permitKeys, type PermitKeys } from './flow-keys.js';
import type { ResolvedGlobalConcurrency } from './flow-options.js';
import { flowScripts } from './scripts/loader.js';

/**
 * How long after this worker's last acquire its spare permits may serve reads: what that acquire
 * told of the permits held by all (plenty or scarce) is at most this old when a spare is used, and
 * spares unused this long go back. A starved reader asks again as often (PERMIT_RETRY_MS).
 */
export const SPARE_PERMIT_MS = 100;

/**
 * One worker's share of a handler's `extras.globalConcurrency` (permits.lua): permits taken before
 * a read, one per entry read, given back as the entries settle (summed per event-loop turn, one
 * call for all). While it holds any, the worker renews its lease every third of it, and the
 * renewal states how many it holds; giving back its last, it states it holds none. So a count that
 * drifted in Redis (a release lost with the connection, an acquire resent after a reconnect, a
 * failover to a replica that missed writes) is set right within a third of the lease, or once the
 * worker holds none. A worker that dies stops renewing and its permits come back to the group
 * when the lease runs out.
 *
 * While permits are plenty, those of settled entries stay with the worker as spares and serve its
 * next reads without a call (a release then an acquire each read cost the worker more CPU than
 * Redis). Spares are held permits: counted in Redis, renewed, freed at the lease's end if the worker
 * dies. They go back when permits are scarce, when the reader finds no backlog (`giveBackSpares`),
 * `SPARE_PERMIT_MS` after the last acquire (so the worker learns within that time whether others
 * now want them), and at close.
 */
export class GlobalPermits {
  private readonly keys: PermitKeys;
  /** Permits this worker holds, including those queued to go back (`releasing`) until they are sent. */
  private held = 0;
  private releasing = 0;
  /** Held permits no entry or read uses, kept for the next read while permits are plenty. */
  private spare = 0;
  private spareTimer: NodeJS.Timeout | undefined;
  /** performance.now() of the last acquire's reply: when `heldByAll` was learnt. */
  private acquiredAt = Number.NEGATIVE_INFINITY;
  private flushQueued = false;
  /** Acquires sent and not answered: a renewal then cannot know the count, so it only extends the lease. */
  private acquiring = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private lastRelease: Promise<void> = Promise.resolve();
  /** Who waits for the next release; each wait removes itself when it ends, woken or not (a starved reader retries every 100 ms). */
  private readonly releaseWaiters = new Set<() => void>();
  /** Permits held by all workers at this worker's last acquire: whether they are scarce (taken as scarce before the first). */
  private heldByAll = Number.POSITIVE_INFINITY;
  private closed = false;

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

  /** Takes up to `wanted` free permits, spares first; resolves how many it got (0: all are held elsewhere). */
  async acquire(wanted: number): Promise<number> {
    if (wanted <= 0) return 0;
    if (this.spare > 0 && performance.now() >= this.acquiredAt + SPARE_PERMIT_MS) this.giveBackSpares();
    const served = Math.min(wanted, this.spare);
    this.spare -= served;
    if (served === wanted) return served;
    try {
      return served + (await this.acquireFromRedis(wanted - served));
    } catch (error) {
      // Not handed out: back to the spares, or to Redis when they are scarce.
      this.release(served);
      throw error;
    }
  }

  private async acquireFromRedis(wanted: number): Promise<number> {
    const { holders, leases } = this.keys;
    this.acquiring++;
    let reply: [number, number];
    try {
      reply = await flowScripts(this.redis).nrsPermits(holders, leases, 'acquire', this.worker, wanted, this.limit.max, this.limit.leaseMs);
    } finally {
      this.acquiring--;
    }
    const count = Number(reply[0]);
    this.heldByAll = Number(reply[1]);
    this.acquiredAt = performance.now();
    this.held += count;
    if (this.held > 0) this.renewWhileHeld();
    if (this.spare > 0) {
      if (this.scarce()) this.giveBackSpares();
      else this.giveBackSparesWhenStale();
    }
    return count;
  }

  /**
   * Gives back `count` permits: kept as spares while permits are plenty and the last acquire is
   * recent, else to Redis in one call with the others released this turn.
   */
  release(count: number): void {
    const giving = Math.min(count, this.held - this.releasing - this.spare);
    if (giving <= 0) return;
    if (!this.closed && !this.scarce() && performance.now() < this.acquiredAt + SPARE_PERMIT_MS) {
      this.spare += giving;
      if (this.spareTimer === undefined) this.giveBackSparesWhenStale();
      if (this.releaseWaiters.size > 0) this.wakeReleaseWaiters();
      return;
    }
    this.queueRelease(giving);
  }

  /** The spares go back to Redis (the reader found no backlog, or they are stale or scarce). */
  giveBackSpares(): void {
    if (this.spareTimer !== undefined) clearTimeout(this.spareTimer);
    this.spareTimer = undefined;
    const spare = this.spare;
    this.spare = 0;
    this.queueRelease(spare);
  }

  private queueRelease(count: number): void {
    if (count <= 0) return;
    this.releasing += count;
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.lastRelease = this.flush();
    });
  }

  /** Unused past `SPARE_PERMIT_MS` after the last acquire, the spares go back by themselves (re-armed by each acquire). */
  private giveBackSparesWhenStale(): void {
    if (this.spareTimer !== undefined) clearTimeout(this.spareTimer);
    this.spareTimer = setTimeout(() => {
      this.spareTimer = undefined;
      this.giveBackSpares();
    }, Math.max(0, this.acquiredAt + SPARE_PERMIT_MS - performance.now()));
    this.spareTimer.unref();
  }

  /** Half or more of the permits were held by all at this worker's last acquire (scarce before the first). */
  private scarce(): boolean {
    return this.heldByAll * 2 >= this.limit.max;
  }

  /**
   * How many more permits this worker may ask for. While they are scarce (half or more held at its
   * last acquire) no more than its handlers can run (`concurrency`): held beyond that they would
   * only wait here while other workers idle. While they are plenty, `plenty` (the reader's: what
   * its reads may hold without the limit): reads as large as without the limit, not cut to what is
   * left under `concurrency`.
   */
  roomHere(concurrency: number, plenty: number): number {
    // Spares count as room: a read takes them first.
    return Math.max(0, (this.scarce() ? concurrency : Math.max(concurrency, plenty)) - (this.held - this.spare));
  }

  /**
   * Calls `wake` at the next release of one of this worker's permits (a reader short of permits may
   * ask again then). Returns the end of the wait: a wait that ended otherwise (its retry timer) must
   * call it, or a worker that holds no permit, and so never releases one, would keep every wait.
   */
  onNextRelease(wake: () => void): () => void {
    const waiter = (): void => wake();
    this.releaseWaiters.add(waiter);
    return () => this.releaseWaiters.delete(waiter);
  }

  /** Gives back every permit still held and stops renewing. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopRenewing();
    if (this.spareTimer !== undefined) clearTimeout(this.spareTimer);
    this.spareTimer = undefined;
    this.spare = 0;
    this.releasing = this.held;
    await this.lastRelease;
    await this.flush();
    this.wakeReleaseWaiters();
  }

  private async flush(): Promise<void> {
    const count = this.releasing;
    if (count <= 0) return;
    this.releasing = 0;
    this.held -= count;
    if (this.held === 0) this.stopRenewing();
    try {
      const { holders, leases } = this.keys;
      // Holding none with every acquire answered, it states 0 rather than subtracting: permits Redis
      // counts for it beyond its own (an acquire resent after a reconnect, or one whose reply was
      // lost) go too. Subtracted, they would stay: renewals run only while it holds some, and an
      // idle reader's grant before each read extends their lease.
      if (this.held === 0 && this.acquiring === 0) {
        await flowScripts(this.redis).nrsPermits(holders, leases, 'renew', this.worker, 0, this.limit.max, this.limit.leaseMs);
      } else {
        await flowScripts(this.redis).nrsPermits(holders, leases, 'release', this.worker, count, this.limit.max, this.limit.leaseMs);
      }
    } catch (error) {
      // Not given back now: the next renewal states the count without them (or the lease runs out).
      this.warn(`could not give back ${count} global-concurrency permit(s): ${errorMessage(error)}; the next lease renewal or the lease's end (${this.limit.leaseMs} ms) frees them`);
      // Holding none now, no renewal is due: one states the count (0) once Redis answers again.
      if (this.held === 0) setTimeout(() => void this.renew(), Math.floor(this.limit.leaseMs / 3)).unref();
    }
    this.wakeReleaseWaiters();
  }

  private wakeReleaseWaiters(): void {
    const waiting = [...this.releaseWaiters];
    this.releaseWaiters.clear();
    for (const wake of waiting) wake();
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
    if (this.closed) return;
    const { holders, leases } = this.keys;
    // With an acquire unanswered the count here is behind Redis': only the lease is extended ('').
    const stated = this.acquiring > 0 ? '' : String(this.held);
    try {
      const [before] = await flowScripts(this.redis).nrsPermits(holders, leases, 'renew', this.worker, stated, this.limit.max, this.limit.leaseMs);
      if (Number(before) === 0 && stated !== '' && Number(stated) > 0) {
        this.warn(
          `the lease on ${stated} global-concurrency permit(s) ran out before it was renewed (this worker stalled or lost Redis for over ${this.limit.leaseMs} ms); they are taken again, so the group may run over its limit until these entries finish`,
        );
      }
    } catch (error) {
      this.warn(`could not renew the global-concurrency lease: ${errorMessage(error)}`);
    }
  }
}
