import type { RedisConnection } from '../redis/connection.js';
import type { LostLease } from './leases.js';

/**
 * The messages between the server (main thread) and its lease thread (lease-thread.ts), a
 * watchdog: the main thread says nothing per entry. It stamps the shared heartbeat on a timer of
 * its own; while the stamp is fresh it renews its leases itself (lease-keeper.ts) and the thread
 * only reads the stamp. Once the stamp is stale (the event loop is blocked), the thread renews
 * what Redis says this consumer holds, per stream + group it was given at start.
 */

export interface LeaseThreadData {
  /** The server's connection option, cloneable (redis/thread-connection.ts). */
  readonly connection: RedisConnection | undefined;
  /** How long the first connect may take before the thread gives up (the server's `startupTimeout`). */
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

export type ToLeaseThread = { readonly type: 'stop' };

export type FromLeaseThread =
  /** Its connection is ready: it watches the heartbeat from now on. */
  | { readonly type: 'ready' }
  | { readonly type: 'renewed'; readonly count: number }
  | { readonly type: 'lost'; readonly stream: string; readonly group: string; readonly leases: LostLease[] }
  /** A renewal failed (it tries again next time). */
  | { readonly type: 'error'; readonly message: string }
  /** It cannot run (its connection could not be made); it ends. */
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
