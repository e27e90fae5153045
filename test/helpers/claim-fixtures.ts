import type { Redis } from 'ioredis';

/** An hour: entries made idle with `makeIdle` are older than any `minIdleTime` the tests use. */
export const LONG_IDLE_MS = 3_600_000;
/** Ten minutes: the `minIdleTime` of most tests; fresh entries are far younger. */
export const MIN_IDLE = 'PT10M';

/** Adds `n` entries `{ n: <i> }` (pipelined) and returns their ids in order. */
export async function addEntries(redis: Redis, key: string, n: number, from = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 1000) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(n, start + 1000); i++) pipeline.xadd(key, '*', 'n', String(from + i));
    const replies = (await pipeline.exec()) ?? [];
    for (const [error, id] of replies) {
      if (error) throw error;
      ids.push(id as string);
    }
  }
  return ids;
}

/** Delivers every new entry to `consumer` (delivery count 1), `count` at a time. */
export async function deliver(redis: Redis, key: string, group: string, consumer: string, count = 10_000): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const reply = (await redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, '>')) as
      | [string, [string, string[]][]][]
      | null;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) return ids;
    for (const [id] of entries) ids.push(id);
  }
}

/** Makes pending entries look idle for an hour without changing owner or delivery count (XCLAIM IDLE JUSTID). */
export async function makeIdle(redis: Redis, key: string, group: string, owner: string, ids: readonly string[]): Promise<void> {
  for (let start = 0; start < ids.length; start += 1000) {
    await redis.xclaim(key, group, owner, 0, ...ids.slice(start, start + 1000), 'IDLE', LONG_IDLE_MS, 'JUSTID');
  }
}

export interface PendingRow {
  id: string;
  consumer: string;
  deliveryCount: number;
}

/** The whole PEL of a group (XPENDING - + n), by id. */
export async function pendingById(redis: Redis, key: string, group: string): Promise<Map<string, PendingRow>> {
  const rows = (await redis.xpending(key, group, '-', '+', 100_000)) as [string, string, number, number][];
  return new Map(rows.map(([id, consumer, , deliveryCount]) => [id, { id, consumer, deliveryCount }]));
}

/** A fresh stream with a group at 0 (the group sees every entry). */
export async function createGroup(redis: Redis, key: string, group: string): Promise<void> {
  await redis.xgroup('CREATE', key, group, '0', 'MKSTREAM');
}
