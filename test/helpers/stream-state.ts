// What the specs read (and write) of a stream's state in Redis, apart from the app under test. No
// Nest here: the specs that drive worker processes import only this and stay light to load.
import type { Redis } from 'ioredis';

/** A JSON-wire-format event entry, written the way any producer could. */
export function xaddEvent(redis: Redis, stream: string, pattern: string, data: unknown): Promise<string | null> {
  return redis.xadd(stream, '*', 'pattern', pattern, 'data', JSON.stringify(data));
}

export async function pendingCount(redis: Redis, stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

/** XPENDING extended rows as objects. */
export async function pendingRows(
  redis: Redis,
  stream: string,
  group: string,
  consumer?: string,
): Promise<Array<{ id: string; consumer: string; idle: number; deliveries: number }>> {
  const args: (string | number)[] = [stream, group, '-', '+', 10_000];
  if (consumer) args.push(consumer);
  const rows = (await redis.call('XPENDING', ...args)) as Array<[string, string, number, number]>;
  return rows.map(([id, owner, idle, deliveries]) => ({ id, consumer: owner, idle: Number(idle), deliveries: Number(deliveries) }));
}

/** Our connections still open on the server (by connection name). */
export async function ourClients(redis: Redis): Promise<string[]> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /name=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name.startsWith('nestjs-redis-streams:server'));
}
