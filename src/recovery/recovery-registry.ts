import type { RecoveryTarget } from './pending-recoverer.js';
import type { ResolvedRecoveryOptions } from './recovery-options.js';
import type { RecoveryStats, RecoveryTickResult } from './recovery-stats.js';

/** What `RedisStreamsRecovery` reads of a server's recovery (a `RecoveryScheduler`). */
export interface RegisteredRecovery {
  readonly host: { readonly consumer: string };
  readonly options: Pick<ResolvedRecoveryOptions, 'enabled'>;
  readonly recovered: readonly RecoveryTarget[];
  readonly interval: number;
  stats(): RecoveryStats;
  runOnce(): Promise<RecoveryTickResult>;
}

/**
 * The recovery schedulers of the servers running in this process. A server's scheduler joins
 * at `listen()` and leaves at `close()`; `RedisStreamsRecovery` reads it. Process-wide on
 * purpose: a strategy is usually built outside Nest's container (`new RedisStreamsServer(...)`).
 */
export const recoveryRegistry = new Set<RegisteredRecovery>();
