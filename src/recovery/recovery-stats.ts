/** What one recovery tick (or `runOnce()`) did. */
export interface RecoveryTickResult {
  /** Entries claimed from idle owners and handed to the handlers. */
  claimed: number;
  /** Of `claimed`: failed entries taken from the retry consumer once their backoff was over. */
  retried: number;
  /** Entries moved to the dead-letter stream (max deliveries). */
  deadLettered: number;
  /** Pending entries found trimmed/deleted: acked away (or tombstoned) and reported. */
  deletedPending: number;
  /** Entries trimmed before the group read them (lower bound), from the trim check. */
  trimmedUndelivered: number;
  consumersReaped: number;
  /** Steps that failed (logged and emitted as `error`); the tick went on with the next stream. */
  errors: number;
}

/** Counters since the server started (`RedisStreamsRecovery.stats()`). */
export interface RecoveryStats extends RecoveryTickResult {
  ticks: number;
  /** Dead letters written for undecodable entries. */
  decodeErrors: number;
  leasesRenewed: number;
  leasesLost: number;
  /** Ticks in a row, up to the last one, with a failed step (0 after a clean tick). */
  failedTicksInARow: number;
  /** Epoch ms of the last finished tick, or null. */
  lastTickAt: number | null;
  lastError: string | null;
}

export function emptyTickResult(): RecoveryTickResult {
  return { claimed: 0, retried: 0, deadLettered: 0, deletedPending: 0, trimmedUndelivered: 0, consumersReaped: 0, errors: 0 };
}

export function emptyStats(): RecoveryStats {
  return { ...emptyTickResult(), ticks: 0, failedTicksInARow: 0, decodeErrors: 0, leasesRenewed: 0, leasesLost: 0, lastTickAt: null, lastError: null };
}

/** Adds a tick's result; `full`: a tick over whole pending lists (counted in `ticks`), not a retry tick. */
export function addTick(stats: RecoveryStats, tick: RecoveryTickResult, full = true): void {
  stats.claimed += tick.claimed;
  stats.retried += tick.retried;
  stats.deadLettered += tick.deadLettered;
  stats.deletedPending += tick.deletedPending;
  stats.trimmedUndelivered += tick.trimmedUndelivered;
  stats.consumersReaped += tick.consumersReaped;
  stats.errors += tick.errors;
  if (full) stats.ticks++;
  stats.failedTicksInARow = tick.errors > 0 ? stats.failedTicksInARow + 1 : 0;
  stats.lastTickAt = Date.now();
}
