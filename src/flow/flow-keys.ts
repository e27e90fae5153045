import { companionKey } from '../redis/keys.js';

/**
 * The keys that hold a handler's shared flow control, all in the hash slot of the pattern's stream
 * (the stream itself, or for a partitioned pattern the stream its partitions are named after), so
 * every worker of the group, whichever partition it reads, meets the same keys:
 * - `{orders}:paused`: a hash of paused group → when it was paused (ms, the pauser's clock);
 * - `{orders}:rate:<group>`: the token bucket of `extras.rateLimit` (expires when idle); with a
 *   per-key limit one bucket per key, `{orders}:rate:<group>:<key>`;
 * - `{orders}:permits:<group>` / `{orders}:permit-leases:<group>`: the `extras.globalConcurrency`
 *   permits each worker holds, and when each worker's hold runs out unless renewed.
 */
export function pausedKey(stream: string): string {
  return companionKey(stream, 'paused');
}

export function rateLimitKey(stream: string, group: string): string {
  return companionKey(stream, `rate:${group}`);
}

export interface PermitKeys {
  readonly holders: string;
  readonly leases: string;
}

export function permitKeys(stream: string, group: string): PermitKeys {
  return { holders: companionKey(stream, `permits:${group}`), leases: companionKey(stream, `permit-leases:${group}`) };
}
