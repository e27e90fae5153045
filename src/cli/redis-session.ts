import type { Redis } from 'ioredis';
import type { GlobalFlags } from './context.js';
import type { CliIo } from './io.js';

/**
 * Connects to the URL of `--url` / REDIS_URL, runs `work`, closes. The connection module (and
 * with it ioredis) is imported here, at run time, so that `--help` and usage errors never load it.
 */
export async function withCliRedis<T>(io: CliIo, flags: GlobalFlags, work: (redis: Redis) => Promise<T>): Promise<T> {
  const { resolveUrl, withRedis } = await import('./connection.js');
  return withRedis(resolveUrl(flags, io), work);
}
