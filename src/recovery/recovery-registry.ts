import type { RecoveryScheduler } from './recovery-scheduler.js';

/**
 * The recovery schedulers of the servers running in this process. A server's scheduler joins
 * at `listen()` and leaves at `close()`; `RedisStreamsRecovery` reads it. Process-wide on
 * purpose: a strategy is usually built outside Nest's container (`new RedisStreamsServer(...)`).
 */
export const recoveryRegistry = new Set<RecoveryScheduler>();
