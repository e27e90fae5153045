import type { RedisClient } from '../redis/connection.js';
import { timeReplyMs } from '../redis/server-time.js';

/**
 * The Redis server's clock, as an offset from ours. MINID trimming must use the time the server
 * stamps entry ids with, not the producer's clock (which may be minutes off). One TIME round trip
 * at start and then every `refreshMs`; emits never wait for it once it is known.
 */
export class ServerClock {
  private offsetMs: number | undefined;
  private pending: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly refreshMs: number,
  ) {}

  /** Server time in ms, or `undefined` before the first TIME reply. */
  now(): number | undefined {
    return this.offsetMs === undefined ? undefined : Date.now() + this.offsetMs;
  }

  /** Resolves once the offset is known (at once after the first sync). */
  ready(): Promise<void> {
    if (this.offsetMs !== undefined) return Promise.resolve();
    return this.sync();
  }

  start(): void {
    if (this.timer) return;
    void this.sync().catch(() => undefined);
    this.timer = setInterval(() => void this.sync().catch(() => undefined), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private sync(): Promise<void> {
    this.pending ??= this.measure().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async measure(): Promise<void> {
    const before = Date.now();
    const reply = await this.redis.time();
    const after = Date.now();
    const serverMs = timeReplyMs(reply);
    // The reply was stamped somewhere in the round trip; its middle is the best guess.
    this.offsetMs = serverMs - (before + after) / 2;
  }
}
