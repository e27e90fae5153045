import type { RedisClient } from '../redis/connection.js';
import { integerArgument } from './arguments.js';
import type { GlobalFlags } from './context.js';
import type { CliIo } from './io.js';

/**
 * Connects to the URL of `--url` / REDIS_URL (a Redis Cluster when that node says so, or with
 * `--cluster`), runs `work`, closes; connecting and every command get `--timeout` (default 5 s),
 * so no command waits forever on a server that accepted the connection and answers nothing.
 * The connection module (and with it ioredis) is imported here, at run time, so that `--help`
 * and usage errors never load it.
 */
export async function withCliRedis<T>(io: CliIo, flags: GlobalFlags, work: (redis: RedisClient) => Promise<T>): Promise<T> {
  const [{ DEFAULT_TIMEOUT_MS, resolveUrl, withRedis }, { timerMillisOption }] = await Promise.all([import('./connection.js'), import('../validation.js')]);
  // A bad value is a usage error naming --timeout, reported before connecting.
  const timeoutMs = timerMillisOption('timeout', integerArgument(flags.timeout), DEFAULT_TIMEOUT_MS, 1);
  return withRedis(resolveUrl(flags, io), work, { cluster: flags.cluster === true, timeoutMs });
}
