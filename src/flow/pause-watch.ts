import { errorMessage } from '../error-message.js';
import { isNoPermission } from '../redis/acl-refusal.js';
import type { RedisClient } from '../redis/connection.js';
import { pausedKey } from './flow-keys.js';

/** A stream's group a worker reads: `stream` is the pattern's stream (a partitioned pattern's base stream). */
export interface PauseTarget {
  readonly stream: string;
  readonly group: string;
}

/**
 * A worker's view of which of its groups are paused (pause-state.ts), read from Redis every
 * `pollMs` (one HMGET per stream), so a pause reaches every worker within one poll. `changed` is
 * told of each change, so a reader blocked on a paused stream can be woken at once.
 */
export class PauseWatch {
  private readonly paused = new Set<string>();
  private readonly groupsByStream = new Map<string, string[]>();
  private timer: NodeJS.Timeout | undefined;
  private waiters: Array<() => void> = [];
  private failing = false;
  private stopped = false;
  /** Counts the changes seen: a reader that read it before an await knows whether it still holds. */
  version = 0;

  constructor(
    private readonly redis: RedisClient,
    targets: readonly PauseTarget[],
    private readonly pollMs: number,
    private readonly changed: (target: PauseTarget, paused: boolean) => void,
    private readonly warn: (message: string) => void,
  ) {
    for (const { stream, group } of targets) {
      const groups = this.groupsByStream.get(stream) ?? [];
      if (!groups.includes(group)) groups.push(group);
      this.groupsByStream.set(stream, groups);
    }
  }

  /** Reads the state once (so a paused group is not read at start-up), then every `pollMs`. */
  async start(): Promise<void> {
    await this.poll();
    this.schedule();
  }

  /** Reads the state now (after this process paused or resumed a group), besides the regular polls. */
  refresh(): Promise<void> {
    return this.stopped ? Promise.resolve() : this.poll();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.wake();
  }

  isPaused(stream: string, group: string): boolean {
    return this.paused.size > 0 && this.paused.has(targetKey(stream, group));
  }

  /** Paused groups, as `stream` + `group`. */
  pausedTargets(): PauseTarget[] {
    return [...this.paused].map((key) => {
      const [stream, group] = key.split('\u0000') as [string, string];
      return { stream, group };
    });
  }

  /** Resolves at the next change of any group's state (or at stop). */
  waitForChange(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Polls every `pollMs` from one poll's start to the next, so a round trip does not stretch the period. */
  private schedule(delayMs = this.pollMs): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const started = Date.now();
      void this.poll().finally(() => this.schedule(Math.max(0, this.pollMs - (Date.now() - started))));
    }, delayMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      await Promise.all([...this.groupsByStream].map(([stream, groups]) => this.pollStream(stream, groups)));
      if (this.failing) this.warn('reading the pause state works again');
      this.failing = false;
    } catch (error) {
      if (isNoPermission(error)) {
        // Asking again would only fill the ACL log: this worker runs without pause/resume.
        this.warn(
          `pause / resume is off on this worker: its ACL user may not read the pause state (${errorMessage(error)}); grant +hmget on ${[...this.groupsByStream.keys()].map((stream) => `~${pausedKey(stream)}`).join(' ')} (docs/security.md)`,
        );
        // Without a way to see a resume, a pause seen before would hold its readers for good.
        if (this.paused.size > 0) {
          this.paused.clear();
          this.version++;
        }
        this.stop();
        return;
      }
      // The last state stands: a Redis that cannot be asked cannot be read from either.
      if (!this.failing) this.warn(`could not read the pause state (${errorMessage(error)}); keeping the last one`);
      this.failing = true;
    }
  }

  private async pollStream(stream: string, groups: readonly string[]): Promise<void> {
    const reply = (await this.redis.hmget(pausedKey(stream), ...groups)) as (string | null)[];
    let anyChange = false;
    groups.forEach((group, i) => {
      const key = targetKey(stream, group);
      const paused = reply[i] !== null && reply[i] !== undefined;
      if (paused === this.paused.has(key)) return;
      if (paused) this.paused.add(key);
      else this.paused.delete(key);
      anyChange = true;
      this.version++;
      if (!this.stopped) this.changed({ stream, group }, paused);
    });
    if (anyChange) this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}


function targetKey(stream: string, group: string): string {
  return `${stream}\u0000${group}`;
}
