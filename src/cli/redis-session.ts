import type { RedisClient } from '../redis/connection.js';
import type { GlobalFlags } from './context.js';
import type { CliIo } from './io.js';

/**
 * Connects to the URL of `--url` / REDIS_URL (a Redis Cluster when that node says so, or with
 * `--cluster`), runs `work`, closes. The connection module (and
 * with it ioredis) is imported here, at run time, so that `--help` and usage errors never load it.
 */
export async function withCliRedis<T>(io: CliIo, flags: GlobalFlags, work: (redis: RedisClient) => Promise<T>): Promise<T> {
  const { resolveUrl, withRedis } = await import('./connection.js');
  return withRedis(resolveUrl(flags, io), work, flags.cluster === true);
}
