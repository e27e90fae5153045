import type { InFlightEntry } from './in-flight.js';

/**
 * Entries waiting in this worker for a rate-limit token (their key's, or a fresh start token of
 * their handler's: entry-handling.ts `takeTokenOrHold`), where recovery does not run, so they
 * cannot be parked with the retry consumer. Each waits on a timer that
 * close() cancels: an entry whose handler never started must not keep close() waiting for
 * `shutdownTimeout`, nor start once close() began. close() then hands the entries back to the group.
 */
export class KeyHolds {
  /** Each held entry and its timer (none once close() began: the entry only waits for the handoff). */
  private readonly held = new Map<InFlightEntry, NodeJS.Timeout | undefined>();
  private state: 'running' | 'stopped' | 'taken' = 'running';

  /** close() began: no held entry starts any more. */
  get stopped(): boolean {
    return this.state !== 'running';
  }

  /**
   * Holds `entry` for `ms`, then `resume`s it. Once close() began the entry is kept, without a
   * timer, for the handoff. False once the handoff took the held entries: the caller leaves it pending.
   */
  hold(entry: InFlightEntry, ms: number, resume: () => void): boolean {
    if (this.state === 'taken') return false;
    const timer =
      this.state === 'running'
        ? setTimeout(() => {
            this.held.delete(entry);
            resume();
          }, ms)
        : undefined;
    timer?.unref();
    this.held.set(entry, timer);
    return true;
  }

  /** close() began: the timers stop, the entries stay held for `takeAll()`. */
  stop(): void {
    if (this.state !== 'running') return;
    this.state = 'stopped';
    for (const timer of this.held.values()) clearTimeout(timer);
  }

  /** The held entries, none of them started, for the handoff; later holds are refused. */
  takeAll(): InFlightEntry[] {
    this.stop();
    this.state = 'taken';
    const entries = [...this.held.keys()];
    this.held.clear();
    return entries;
  }
}
