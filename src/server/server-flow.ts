import type { Logger } from '@nestjs/common';
import { GlobalPermits } from '../flow/global-permits.js';
import { PauseWatch, type PauseTarget } from '../flow/pause-watch.js';
import { SharedRateLimit } from '../flow/shared-rate-limit.js';
import type { RedisClient } from '../redis/connection.js';
import type { BindingLimits } from './binding-limits.js';
import { patternStreamOf } from './handled-stream.js';
import { readerRateLimit } from './handler-extras.js';
import type { StreamBinding } from './in-flight.js';

/** How long a reader short of permits waits before it asks again, unless one of its own comes back first. */
export const PERMIT_RETRY_MS = 100;
/** Pause polls: at most this often, at least every second. */
const MIN_PAUSE_POLL_MS = 50;
const MAX_PAUSE_POLL_MS = 1_000;

/**
 * A server's flow control across workers (src/flow/): which of its groups are paused, and each
 * limited binding's shared rate limit and global-concurrency permits. The readers ask it before
 * they read; the prefetch slots give permits back as entries settle.
 */
export class ServerFlow {
  readonly pauses: PauseWatch;
  private readonly allLimits: BindingLimits[] = [];

  constructor(
    commands: RedisClient,
    bindings: readonly StreamBinding[],
    consumer: string,
    blockMs: number,
    logger: Logger,
    pauseChanged: (target: PauseTarget, paused: boolean) => void,
  ) {
    const warn = (message: string): void => logger.warn(message);
    const pollMs = Math.min(MAX_PAUSE_POLL_MS, Math.max(MIN_PAUSE_POLL_MS, Math.floor(blockMs / 2)));
    this.pauses = new PauseWatch(commands, bindings.map((binding) => ({ stream: patternStreamOf(binding), group: binding.group })), pollMs, pauseChanged, warn);
    const shared = new Map<string, BindingLimits>();
    for (const binding of bindings) {
      if (binding.rateLimit === undefined && binding.globalConcurrency === undefined) continue;
      const stream = patternStreamOf(binding);
      const key = `${stream}\u0000${binding.group}`;
      let limits = shared.get(key);
      if (limits === undefined) {
        const rate = binding.rateLimit && new SharedRateLimit(commands, stream, binding.group, binding.rateLimit);
        limits = {
          rate: readerRateLimit(binding.rateLimit) === undefined ? undefined : rate,
          perKey: readerRateLimit(binding.rateLimit) === undefined ? rate : undefined,
          permits: binding.globalConcurrency && new GlobalPermits(commands, stream, binding.group, consumer, binding.globalConcurrency, warn),
        };
        shared.set(key, limits);
        this.allLimits.push(limits);
      }
      binding.limits = limits;
    }
  }

  isPaused(binding: StreamBinding): boolean {
    return this.pauses.isPaused(patternStreamOf(binding), binding.group);
  }

  start(): Promise<void> {
    return this.pauses.start();
  }

  /** Stops watching; gives back every permit still held (called once no entry is in hand). */
  async stop(): Promise<void> {
    this.pauses.stop();
    await Promise.all(this.allLimits.map((limits) => limits.permits?.close()));
  }
}
