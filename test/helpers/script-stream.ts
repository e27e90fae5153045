import type { Redis } from 'ioredis';
import { afterEach, beforeEach } from 'vitest';
import { useRedisServer } from './use-redis-server.js';

/**
 * One stream and group for the recovery script specs, emptied before each test: entries are
 * published, delivered to named consumers and inspected through these helpers.
 */
export const STREAM = 'orders';
export const DEAD = '{orders}:dead';
export const GROUP = 'workers';

export type PelRow = [id: string, consumer: string, idle: number, deliveries: number];

export function useScriptStream() {
  const redis = useRedisServer();
  const extra: Redis[] = [];

  beforeEach(async () => {
    await redis.client.flushall();
    await redis.client.xgroup('CREATE', STREAM, GROUP, '0', 'MKSTREAM');
  });
  afterEach(() => {
    for (const client of extra.splice(0)) client.disconnect();
  });

  function connection(): Redis {
    const client = redis.server.client();
    extra.push(client);
    return client;
  }

  async function publish(count: number, fields: (i: number) => string[] = (i) => ['n', String(i)]): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await redis.client.xadd(STREAM, '*', ...fields(i))) as string);
    return ids;
  }

  /** XREADGROUP `count` new entries as `consumer`; they become pending for it with 1 delivery. */
  async function deliver(consumer: string, count: number): Promise<string[]> {
    const reply = (await redis.client.xreadgroup('GROUP', GROUP, consumer, 'COUNT', count, 'STREAMS', STREAM, '>')) as
      | [string, [string, string[]][]][]
      | null;
    return (reply?.[0]?.[1] ?? []).map(([id]) => id);
  }

  async function pel(): Promise<PelRow[]> {
    return (await redis.client.xpending(STREAM, GROUP, '-', '+', 10_000)) as PelRow[];
  }

  async function pendingRow(id: string): Promise<PelRow | undefined> {
    return ((await redis.client.xpending(STREAM, GROUP, id, id, 1)) as PelRow[])[0];
  }

  async function redisNowMs(): Promise<number> {
    const [seconds, micros] = await redis.client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  return { redis, connection, publish, deliver, pel, pendingRow, redisNowMs };
}
