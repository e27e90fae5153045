import type { RedisStreamsLiveness } from '../server/liveness.js';
import { patternStreamOf } from '../server/handled-stream.js';

/** Counts of one stream + group, read at check time (readiness only). */
export interface StreamCounts {
  readonly stream: string;
  readonly group: string;
  /** XINFO GROUPS `lag` (entries not yet delivered to the group); null when Redis cannot tell. */
  readonly lag: number | null;
  /** XINFO GROUPS `pending` (delivered, not acked). */
  readonly pending: number;
  /** XLEN of the stream's dead-letter stream. */
  readonly deadLetters: number;
  /** Delayed entries due (Redis' clock) and not promoted into the stream yet (docs/scheduling.md); only read with a `delayedDue` threshold. */
  readonly delayedDue?: number;
}

/** Upper bounds per stream + group; a count above one makes the check fail. Unset: not checked. */
export interface RedisStreamsHealthThresholds {
  /** Entries not yet delivered to the group (XINFO GROUPS `lag`, Redis 7.0+). */
  lag?: number;
  /** Entries delivered and not yet acked (the group's pending list). */
  pending?: number;
  /** Entries in the stream's dead-letter stream. */
  deadLetters?: number;
  /**
   * Delayed entries due and not promoted yet (ZCOUNT of `{stream}:delayed` up to Redis' TIME).
   * Workers promote within `delayed.interval`, so a short spike is normal; a count that stays up
   * means nobody promotes them.
   */
  delayedDue?: number;
}

export interface LivenessLimits {
  /** A read may stay blocked, or the loop go without a returned read, for blockMs + this. */
  readonly readGraceMs: number;
  /** Recovery ticks that may fail in a row; one more is a problem. */
  readonly maxFailedRecoveryTicks: number;
}

/** Why a read loop counts as stuck, or undefined when it is alive. */
export function stuckReaders(liveness: RedisStreamsLiveness, limits: LivenessLimits): string[] {
  const problems: string[] = [];
  const allowed = liveness.blockMs + limits.readGraceMs;
  for (const reader of liveness.readers) {
    // Paused, or waiting for a shared limit: quiet on purpose (a restart would not help).
    if (reader.held !== null && reader.held !== undefined) continue;
    if (reader.readStartedAt !== null) {
      const blocked = liveness.at - reader.readStartedAt;
      if (blocked > allowed) problems.push(`reader of group "${reader.group}": a read has been waiting for Redis for ${blocked} ms (allowed ${allowed} ms)`);
      continue;
    }
    const quiet = liveness.at - (reader.lastReadAt ?? reader.since);
    if (quiet > allowed) {
      const slots = liveness.prefetch.free === 0 ? `; all ${liveness.prefetch.size} prefetch slots are held by entries not yet finished or acked` : '';
      problems.push(`reader of group "${reader.group}": no read returned for ${quiet} ms (allowed ${allowed} ms)${slots}`);
    }
  }
  return problems;
}

/**
 * The paused groups of a server's streams, as `stream` + `group` where `stream` is the one the
 * pause is kept on (the pattern's own stream, for all its partitions or priority lanes): details, never a
 * problem. Who paused a group wants it to stay up (a restart would not resume it; the state is
 * in Redis) while entries wait; a `lag` threshold still says when they wait too long.
 */
export function pausedGroups(liveness: RedisStreamsLiveness): { stream: string; group: string }[] {
  const paused = new Map<string, { stream: string; group: string }>();
  for (const handled of liveness.streams) {
    if (!handled.paused) continue;
    const target = { stream: patternStreamOf(handled), group: handled.group };
    paused.set(`${target.stream}\u0000${target.group}`, target);
  }
  return [...paused.values()];
}

/** Liveness problems: not listening, stuck read loops. */
export function livenessProblems(liveness: RedisStreamsLiveness, limits: LivenessLimits): string[] {
  if (liveness.state !== 'listening') return [`server is ${liveness.state}, not listening`];
  return stuckReaders(liveness, limits);
}

/** Readiness problems: liveness ones, connections not ready, recovery ticks failing in a row. */
export function readinessProblems(liveness: RedisStreamsLiveness, limits: LivenessLimits): string[] {
  const problems = livenessProblems(liveness, limits);
  if (liveness.state !== 'listening') return problems;
  for (const connection of liveness.connections) {
    if (connection.status !== 'ready') problems.push(`connection "${connection.name}" is ${connection.status}`);
  }
  const recovery = liveness.recovery;
  if (recovery !== null && recovery.failedTicksInARow > limits.maxFailedRecoveryTicks) {
    problems.push(`recovery: the last ${recovery.failedTicksInARow} ticks failed (last error: ${recovery.lastError ?? 'unknown'})`);
  }
  return problems;
}

/** Counts above their thresholds. */
export function thresholdProblems(counts: StreamCounts, thresholds: RedisStreamsHealthThresholds | undefined): string[] {
  if (thresholds === undefined) return [];
  const problems: string[] = [];
  const where = `"${counts.stream}" (group "${counts.group}")`;
  if (thresholds.lag !== undefined && counts.lag !== null && counts.lag > thresholds.lag) {
    problems.push(`${where}: lag ${counts.lag} is above ${thresholds.lag}`);
  }
  if (thresholds.pending !== undefined && counts.pending > thresholds.pending) {
    problems.push(`${where}: ${counts.pending} pending entries, above ${thresholds.pending}`);
  }
  if (thresholds.deadLetters !== undefined && counts.deadLetters > thresholds.deadLetters) {
    problems.push(`${where}: ${counts.deadLetters} dead letters, above ${thresholds.deadLetters}`);
  }
  if (thresholds.delayedDue !== undefined && counts.delayedDue !== undefined && counts.delayedDue > thresholds.delayedDue) {
    problems.push(`${where}: ${counts.delayedDue} delayed entries due and not promoted, above ${thresholds.delayedDue}`);
  }
  return problems;
}
