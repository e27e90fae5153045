import type { RedisClient, RedisConnection } from '../redis/connection.js';
import type { ResolvedRetryPolicy } from './retry-policy.js';

/** An entry handed to the server's handlers (same shape as the server's `IncomingEntry`). */
export interface RecoveredEntry {
  readonly id: string;
  /** `[f1, v1, …]` as claimed: Buffers, so a handler that wants the exact bytes gets them. */
  readonly flat: readonly (string | Buffer)[];
  readonly deliveryCount: number;
}

/** A stream + group the server handles, with the handler's recovery overrides. */
export interface RecoveryHandledStream {
  readonly stream: string;
  readonly group: string;
  /** The handler's Nest pattern (for `@OnDeadLetter(pattern)`). */
  readonly pattern?: string | undefined;
  /** `extras.maxDeliveries` of the handler. */
  readonly maxDeliveries?: number | undefined;
  /** `extras.minIdleTime` of the handler, in ms. */
  readonly minIdleTime?: number | undefined;
  /** `extras.recovery`: false when this stream + group is not recovered by this server. */
  readonly recovery?: boolean | undefined;
  /** `extras.retry` of the handler: `false` turns the server's retry policy off for it. */
  readonly retry?: ResolvedRetryPolicy | false | undefined;
}

/** Renews the lease of one in-flight entry (what `ctx.extendLease()` calls). */
export type LeaseExtender = (entry: { stream: string; group: string; id: string }, ms: number | undefined) => Promise<void>;

/**
 * What recovery needs from a running server: the `@internal` API of `RedisStreamsServer`.
 * Kept structural so recovery does not import the server (and can be driven by tests).
 */
export interface RecoveryHost {
  /** The consumer name the server reads as; recovery claims under it. */
  readonly consumer: string;
  /** Prefetch slots free now. */
  freePrefetchSlots(): number;
  /**
   * Reserves up to `max` prefetch slots for a claim (a blocked read gives its slots back); claim at
   * most the result. With `target`, the host may grant fewer (or none) for that stream + group: its
   * flow control (a paused group, shared concurrency permits).
   */
  reservePrefetchSlots(max: number, waitMs?: number, target?: { stream: string; group: string }): Promise<number>;
  /** Gives back reserved slots no entry used (with the `target` they were reserved for). */
  releasePrefetchSlots(count: number, target?: { stream: string; group: string }): void;
  /** Whether this process holds (queued, running, awaiting its ack) the entry. */
  isInFlight(stream: string, group: string, id: string): boolean;
  /** Hands claimed entries to the same handlers as fresh reads, releasing `reserved` slots; returns how many were taken. */
  dispatchEntries(stream: string, group: string, entries: readonly RecoveredEntry[], reserved?: number): number;
  handledStreams(): readonly RecoveryHandledStream[];
  /** Ids this process still works on for a stream + group (not those whose ack, nack or handoff is under way). */
  inFlightIds(stream: string, group: string): string[];
  commandConnection(): RedisClient;
  setLeaseExtender(extender: LeaseExtender | undefined): void;
  /** What the lease thread opens its own connection with: the server's connection option and `startupTimeout`. */
  leaseThreadConnection?(): { connection: RedisConnection | undefined; connectTimeout: number };
  /** Work-queue mode: the XACKDEL policy of a stream + group, which dead-letter moves use too. */
  deletePolicyFor?(stream: string, group: string): 'KEEPREF' | 'ACKED' | undefined;
  /** The consumer `close()` hands unstarted entries to; reaped once drained. */
  handoffConsumerName?(): string;
  /** The lease keeper found an entry this process works on held by another consumer (or no longer pending): its handler is told to stop. */
  leaseLost?(stream: string, group: string, id: string, owner: string | null): void;
}
