import type { Logger } from '@nestjs/common';
import { renewLeases, type LostLease } from './leases.js';
import { LeaseThread, type LeaseThreadSettings } from './lease-thread-handle.js';
import type { LeaseLostNotice } from './recovery-events.js';
import type { RecoveryHost } from './recovery-host.js';
import { withTimeout } from '../timeout.js';

/**
 * Keeps this process's in-flight entries from looking idle while their handlers run: every
 * `interval` they are renewed (owner-checked `XCLAIM … 0 JUSTID`: idle back to 0, delivery count
 * unchanged), one script call per stream + group batch, on the event loop. The lease thread
 * (lease-thread-handle.ts), a watchdog, renews in its stead only while the event loop is blocked.
 * An entry found held by another consumer (our lease lapsed and a recoverer took it) is reported
 * once and never renewed again: the script never takes it back.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** stop() ran: nothing is renewed or reported any more. */
  private stopped = false;
  private thread: LeaseThread | undefined;
  /** stream NUL group NUL id of entries we lost, so they are reported and skipped once. */
  private readonly lost = new Set<string>();
  /** What the last renewal held, while the thread waits to be asked to connect (`connectThreadForLongEntries`). */
  private previouslyHeld: Set<string> | undefined;

  constructor(
    private readonly host: RecoveryHost,
    private readonly interval: number,
    private readonly logger: Logger,
    private readonly onRenewed: (count: number) => void,
    private readonly onLost: (notice: LeaseLostNotice) => void,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Starts the renewal timer. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      // Skip a beat rather than pile up renewals behind a slow Redis.
      if (this.running === undefined) this.running = this.renewAll().finally(() => (this.running = undefined));
    }, this.interval);
    this.timer.unref();
  }

  /** Starts the lease thread, which watches the event loop (the streams + groups it lists are the handled ones); logged if it cannot start. */
  startThread(settings: Omit<LeaseThreadSettings, 'interval' | 'streams'>): void {
    if (this.thread !== undefined) return;
    const streams = this.host.handledStreams().map(({ stream, group }) => [stream, group] as const);
    this.thread = new LeaseThread({ ...settings, streams, interval: this.interval }, this.logger, {
      renewed: this.onRenewed,
      lost: (stream, group, leases) => this.reportLostOf(stream, group, leases),
      error: this.onError,
    });
    this.thread.start();
  }

  /**
   * Stops renewing, and waits for a renewal round in flight up to `waitMs` (what close() has left
   * to wait on Redis: a Redis not answering holds it no longer) and for the lease thread (its own
   * bound). A renewal given up on ends on the closed connection: its failure is not reported, nor
   * is anything renewed after (the server is closed; its entries not acked stay pending). A round
   * that does end within the wait is not reported either (its renewed count, lost leases): after
   * stop, nothing is.
   */
  async stop(waitMs: number): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.stopped = true;
    const running = this.running === undefined ? undefined : withTimeout(this.running, waitMs, 'lease renewal').catch(() => undefined);
    await Promise.all([running, this.thread?.stop()]);
  }

  /** Renews every in-flight entry of every handled stream + group now (on this thread's connection). */
  async renewAll(): Promise<void> {
    const held = this.snapshot();
    this.connectThreadForLongEntries(held);
    for (const [stream, group, ids] of held) await this.renew(stream, group, ids);
  }

  /**
   * Asks the lease thread to connect once an entry was held at two renewals in a row (in flight for
   * a lease interval or more): a handler that long may block the loop next, and the thread then
   * renews at once instead of connecting first. Handlers shorter than that never make it connect.
   */
  private connectThreadForLongEntries(held: readonly HeldIds[]): void {
    // No set to build once nothing is to be asked: the thread connects at start, was asked, or does not run.
    if (this.thread?.awaitsConnectAhead !== true) {
      this.previouslyHeld = undefined;
      return;
    }
    const previously = this.previouslyHeld;
    const now = new Set<string>();
    for (const [stream, group, ids] of held) {
      for (const id of ids) {
        const heldKey = key(stream, group, id);
        if (previously?.has(heldKey) === true) {
          this.thread.connectAhead();
          this.previouslyHeld = undefined;
          return;
        }
        now.add(heldKey);
      }
    }
    this.previouslyHeld = now;
  }

  /** What this process holds and still renews, per handled stream + group; lost entries it no longer holds are forgotten. */
  private snapshot(): HeldIds[] {
    const seen = new Set<string>();
    const held: HeldIds[] = [];
    for (const { stream, group } of this.host.handledStreams()) {
      const ids = this.host.inFlightIds(stream, group);
      for (const id of ids) seen.add(key(stream, group, id));
      held.push([stream, group, ids.filter((id) => !this.lost.has(key(stream, group, id)))]);
    }
    for (const lostKey of this.lost) if (!seen.has(lostKey)) this.lost.delete(lostKey);
    return held;
  }

  /** Renews the given ids of one stream + group (what `ctx.extendLease()` does for one entry). */
  async renew(stream: string, group: string, ids: readonly string[]): Promise<void> {
    const wanted = ids.filter((id) => !this.lost.has(key(stream, group, id)));
    if (wanted.length === 0 || this.stopped) return;
    try {
      const { renewed, lost } = await renewLeases(this.host.commandConnection(), {
        stream,
        group,
        consumer: this.host.consumer,
        ids: wanted,
      });
      if (this.stopped) return;
      this.onRenewed(renewed.length);
      this.reportLostOf(stream, group, lost);
    } catch (error) {
      if (this.stopped) return;
      this.onError(new Error(`lease renewal on "${stream}" (group "${group}") failed: ${(error as Error).message}`));
    }
  }

  /** Leases a renewal found lost: reported for what we still work on (an entry acked or handed off meanwhile raced the renewal: not news). */
  private reportLostOf(stream: string, group: string, lost: readonly LostLease[]): void {
    if (lost.length === 0) return;
    const stillOurs = new Set(this.host.inFlightIds(stream, group));
    for (const lease of lost) if (stillOurs.has(lease.id)) this.reportLost(stream, group, lease);
  }

  private reportLost(stream: string, group: string, lease: LostLease): void {
    const lostKey = key(stream, group, lease.id);
    if (this.lost.has(lostKey)) return;
    this.lost.add(lostKey);
    const holder = lease.owner === null ? '' : ` (now held by "${lease.owner}")`;
    this.logger.warn(
      `lease of entry ${lease.id} of "${stream}" (group "${group}") is lost: ${lease.reason}${holder}; not renewing it, its handler may run twice`,
    );
    this.onLost({ stream, group, id: lease.id, reason: lease.reason, owner: lease.owner });
  }
}

type HeldIds = [stream: string, group: string, ids: string[]];

function key(stream: string, group: string, id: string): string {
  return `${stream}\u0000${group}\u0000${id}`;
}
