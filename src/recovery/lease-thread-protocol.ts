import type { RedisConnection } from '../redis/connection.js';
import type { LostLease } from './leases.js';

/**
 * The messages between the server (main thread) and its lease thread (lease-thread.ts), a
 * watchdog: the main thread says nothing per entry. It stamps the shared heartbeat on a timer of
 * its own; while the stamp is fresh it renews its leases itself (lease-keeper.ts) and the thread
 * only reads the stamp. Once the stamp is stale (the event loop is blocked), the thread renews
 * what Redis says this consumer holds, per stream + group it was given at start. The one message
 * besides `stop`: `connect`, once, when an entry has been in flight for a lease interval (a handler
 * that long may block next), so the thread connects while the loop is live.
 */

export interface LeaseThreadData {
  /** The server's connection option, cloneable (redis/thread-connection.ts). */
  readonly connection: RedisConnection | undefined;
  /** How long a connect may take (the server's `startupTimeout`): at start the thread then gives up, later it reports and tries again next round. */
  readonly connectTimeout: number;
  readonly consumer: string;
  /** The streams + groups this consumer reads (fixed once the server listens). */
  readonly streams: ReadonlyArray<readonly [stream: string, group: string]>;
  /** The lease interval, in ms. */
  readonly interval: number;
  /** `recovery.leases.maxBlocked`, in ms. */
  readonly maxBlocked: number;
  /** One Float64: `Date.now()` of the main thread's last heartbeat. */
  readonly heartbeat: SharedArrayBuffer;
}

export type ToLeaseThread = { readonly type: 'stop' } | { readonly type: 'connect' };

export type FromLeaseThread =
  /** It watches the heartbeat from now on (connected first when `connectsAtStart`). */
  | { readonly type: 'ready' }
  | { readonly type: 'renewed'; readonly count: number }
  | { readonly type: 'lost'; readonly stream: string; readonly group: string; readonly leases: LostLease[] }
  /** A renewal failed (it tries again next time). */
  | { readonly type: 'error'; readonly message: string }
  /** It cannot run (its connection could not be made at start, `connectsAtStart`); it ends. */
  | { readonly type: 'failed'; readonly message: string }
  /** The main thread stopped answering for over `maxBlocked`: these entries are no longer renewed. */
  | { readonly type: 'gaveUp'; readonly entries: number; readonly blockedMs: number }
  | { readonly type: 'stopped' };

/**
 * How often the main thread stamps the heartbeat: a few times per lease interval (so the thread
 * sees a blocked loop well before a lease lapses) and per `maxBlocked` (so a live loop never looks
 * wedged).
 */
export function heartbeatInterval(interval: number, maxBlocked: number): number {
  return Math.max(5, Math.floor(Math.min(interval, maxBlocked) / 4));
}

/** The stamp's age past which the event loop counts as blocked and the thread renews: three missed stamps. */
export function staleAfter(interval: number, maxBlocked: number): number {
  return 3 * heartbeatInterval(interval, maxBlocked);
}

/**
 * The shortest lease interval at which the thread waits for a need to load its Redis modules and
 * connect. A block is seen at most three quarters of an interval after it began, when an entry may
 * be idle for 1.75 intervals: with the default `leaseInterval` (`minIdleTime / 3`) 1.25 intervals
 * are left before it lapses, ≥ 1.25 s from here on, for loading (~0.1 s of CPU) and connecting
 * (TLS, Sentinel, Cluster) on a loaded host. Below it the thread connects at start.
 */
export const LAZY_CONNECT_MIN_INTERVAL_MS = 1_000;

/** Whether the thread connects at start rather than at its first need (a block, or an entry in flight for a lease interval). */
export function connectsAtStart(interval: number): boolean {
  return interval < LAZY_CONNECT_MIN_INTERVAL_MS;
}
