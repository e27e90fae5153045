import { companionKey } from '../redis/keys.js';

/**
 * The keys of an entry's lifecycle records, all in its stream's hash slot (redis/keys.ts
 * `companionKey`), so one script writes a record and its notice together on Redis Cluster:
 * - `{orders}:progress:<id>`: the latest `ctx.progress` value of entry `<id>` (with a TTL);
 * - `{orders}:result:<id>`: its kept result or error (`extras.keepResults`, with a TTL);
 * - `{orders}:cancelled:<id>`: why it was cancelled, while its worker may still run it;
 * - `{orders}:lifecycle`: a short stream of notices (`id`, `kind` progress|result) that
 *   `client.result({ wait })` and `client.watch` block on (XREAD), so nobody polls a record.
 * `<stream>` is the key the entry is in: a partition's or a lane's.
 */
export function progressKey(stream: string, id: string): string {
  return companionKey(stream, `progress:${id}`);
}

export function resultKey(stream: string, id: string): string {
  return companionKey(stream, `result:${id}`);
}

/** `{orders}:cancelled:<id>`: why entry `<id>` was cancelled, for the worker that was running it (with a TTL). */
export function cancelMarkerKey(stream: string, id: string): string {
  return companionKey(stream, `cancelled:${id}`);
}

export function lifecycleNoticesKey(stream: string): string {
  return companionKey(stream, 'lifecycle');
}

/** Notices kept in `{orders}:lifecycle` (approximately): a waiter only needs the ones written while it waits. */
export const NOTICES_MAX_LEN = 10_000;
