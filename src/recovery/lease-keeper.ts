import type { Logger } from '@nestjs/common';
import { renewLeases, type LostLease } from './leases.js';
import type { HeldEntries } from './lease-thread-protocol.js';
import { LeaseThread, type LeaseThreadSettings } from './lease-thread-handle.js';
import type { LeaseLostNotice } from './recovery-events.js';
import type { RecoveryHost } from './recovery-host.js';

/**
 * Keeps this process's in-flight entries from looking idle while their handlers run: every
 * `interval` they are renewed (owner-checked `XCLAIM … 0 JUSTID`: idle back to 0, delivery count
 * unchanged), one script call per stream + group batch. With the lease thread
 * (lease-thread-handle.ts) the renewals run there, on a connection and a timer of their own, and
 * this timer sends it what is held; without it (or once it failed) they run here. An entry found
 * held by another consumer (our lease lapsed and a recoverer took it) is reported once and never
 * renewed again: the script never takes it back.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private thread: LeaseThread | undefined;
  /** stream NUL group NUL id of entries we lost, so they are reported and skipped once. */
  private readonly lost = new Set<string>();

  constructor(
    private readonly host: RecoveryHost,
    private readonly interval: number,
    private readonly logger: Logger,
    private readonly onRenewed: (count: number) => void,
    private readonly onLost: (notice: LeaseLostNotice) => void,
    private readonly onError: (error: Error) => void,
  ) {}

  /** Starts the renewal timer: renewals run here, or on the lease thread while it renews. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => {
      if (this.thread?.renewing === true) this.thread.held(this.snapshot());
      // Skip a beat rather than pile up renewals behind a slow Redis.
      else this.renewHere();
    }, this.interval);
    this.timer.unref();
  }

  private renewHere(): void {
    if (this.running === undefined) this.running = this.renewAll().finally(() => (this.running = undefined));
  }

  /** Starts the lease thread; renewals stay here until it is ready, and for good if it cannot start (logged). */
  startThread(settings: Omit<LeaseThreadSettings, 'interval'>): void {
    if (this.thread !== undefined) return;
    const thread = new LeaseThread({ ...settings, interval: this.interval }, this.logger, {
      ready: () => thread.held(this.snapshot()),
      renewed: this.onRenewed,
      lost: (stream, group, leases) => this.reportLostOf(stream, group, leases),
      error: this.onError,
      gone: () => {
        this.host.setAdmissionListener?.(undefined);
        // Entries the thread renewed last may be due now.
        if (this.timer !== undefined) this.renewHere();
      },
    });
    this.thread = thread;
    if (thread.start()) this.host.setAdmissionListener?.((stream, group, ids) => thread.admitted(stream, group, ids));
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.host.setAdmissionListener?.(undefined);
    await Promise.all([this.running, this.thread?.stop()]);
  }

  /** Renews every in-flight entry of every handled stream + group now (on this thread's connection). */
  async renewAll(): Promise<void> {
    for (const [stream, group, ids] of this.snapshot()) await this.renew(stream, group, ids);
  }

  /** What this process holds and still renews, per handled stream + group; lost entries it no longer holds are forgotten. */
  private snapshot(): HeldEntries[] {
    const seen = new Set<string>();
    const held: HeldEntries[] = [];
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
    if (wanted.length === 0) return;
    try {
      const { renewed, lost } = await renewLeases(this.host.commandConnection(), {
        stream,
        group,
        consumer: this.host.consumer,
        ids: wanted,
      });
      this.onRenewed(renewed.length);
      this.reportLostOf(stream, group, lost);
    } catch (error) {
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

function key(stream: string, group: string, id: string): string {
  return `${stream}\u0000${group}\u0000${id}`;
}
