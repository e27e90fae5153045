import type { RedisConnection } from '../redis/connection.js';
import type { LostLease } from './leases.js';

/**
 * The messages between the server (main thread) and its lease thread (lease-thread.ts). The main
 * thread sends what it holds: a snapshot per lease interval, and the ids of each admission (one
 * message per read or claim, before its handlers can block the loop). It stamps the shared
 * heartbeat on a timer of its own, so the thread sees a main thread that stopped answering.
 */

export interface LeaseThreadData {
  /** The server's connection option, cloneable (redis/thread-connection.ts). */
  readonly connection: RedisConnection | undefined;
  /** How long the first connect may take before the thread gives up (the server's `startupTimeout`). */
  readonly connectTimeout: number;
  readonly consumer: string;
  /** The lease interval, in ms. */
  readonly interval: number;
  /** `recovery.leases.maxBlocked`, in ms. */
  readonly maxBlocked: number;
  /** One Float64: `Date.now()` of the main thread's last heartbeat. */
  readonly heartbeat: SharedArrayBuffer;
}

/** [stream, group, ids] */
export type HeldEntries = [stream: string, group: string, ids: string[]];

export type ToLeaseThread =
  /** Everything the main thread holds now (replaces what the thread knew); renew it now. */
  | { readonly type: 'held'; readonly held: HeldEntries[] }
  /** Entries just admitted. */
  | { readonly type: 'started'; readonly stream: string; readonly group: string; readonly ids: string[] }
  | { readonly type: 'stop' };

export type FromLeaseThread =
  /** Its connection is ready: it renews from now on. */
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

/** `heartbeat` stamps of the main thread: often enough that `maxBlocked` (at least 1 s) is never reached by a live loop. */
export function heartbeatInterval(maxBlocked: number): number {
  return Math.max(10, Math.min(1_000, Math.floor(maxBlocked / 4)));
}
