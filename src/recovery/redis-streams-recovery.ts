import { Injectable } from '@nestjs/common';
import { recoveryRegistry, type RegisteredRecovery } from './recovery-registry.js';
import { emptyTickResult, type RecoveryStats, type RecoveryTickResult } from './recovery-stats.js';

/** Which running servers a call applies to; every one by default. */
export interface RecoverySelector {
  /** Only the server reading as this consumer name. */
  consumer?: string;
  /** Only servers that recover this stream. */
  stream?: string;
}

/** Recovery state of one running server. */
export interface ServerRecoveryStats {
  consumer: string;
  /** Streams + groups it recovers, with their effective thresholds. */
  streams: { stream: string; group: string; minIdleTime: number; maxDeliveries: number }[];
  /** Whether ticks run on a timer (`recovery.enabled`). */
  scheduled: boolean;
  /** Time between ticks, in ms: `recovery.interval`, or a quarter of the smallest `minIdleTime` in use. */
  interval: number;
  stats: RecoveryStats;
}

/**
 * The recovery of the `RedisStreamsServer`s running in this process, as a Nest provider:
 * `runOnce()` for applications that schedule recovery themselves (`recovery: { enabled: false }`
 * plus `@nestjs/schedule`), and `stats()` for health checks and dashboards.
 */
@Injectable()
export class RedisStreamsRecovery {
  /** Runs one recovery tick on each selected running server (in turn) and sums the results. */
  async runOnce(selector: RecoverySelector = {}): Promise<RecoveryTickResult> {
    const total = emptyTickResult();
    for (const scheduler of this.select(selector)) {
      const tick = await scheduler.runOnce();
      for (const key of Object.keys(total) as (keyof RecoveryTickResult)[]) total[key] += tick[key];
    }
    return total;
  }

  stats(selector: RecoverySelector = {}): ServerRecoveryStats[] {
    return this.select(selector).map((scheduler) => ({
      consumer: scheduler.host.consumer,
      streams: scheduler.recovered.map(({ stream, group, minIdleTime, maxDeliveries }) => ({ stream, group, minIdleTime, maxDeliveries })),
      scheduled: scheduler.options.enabled,
      interval: scheduler.interval,
      stats: scheduler.stats(),
    }));
  }

  private select({ consumer, stream }: RecoverySelector): RegisteredRecovery[] {
    return [...recoveryRegistry].filter(
      (scheduler) =>
        (consumer === undefined || scheduler.host.consumer === consumer) &&
        (stream === undefined || scheduler.recovered.some((target) => target.stream === stream)),
    );
  }
}
