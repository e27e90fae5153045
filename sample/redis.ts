import { redactUrl } from '../src/redis/connection.js';
import { RedisServerProcess } from '../test/helpers/redis-server.js';

export interface SampleRedis {
  url: string;
  description: string;
  stop(): Promise<void>;
}

/** REDIS_URL when set; otherwise a private redis-server on a free loopback port, stopped at the end. */
export async function startRedis(): Promise<SampleRedis> {
  const url = process.env.REDIS_URL;
  if (url) return { url, description: redactUrl(url), stop: async () => undefined };
  const server = await RedisServerProcess.start();
  return {
    url: server.url,
    description: `private redis-server on ${server.url} (set REDIS_URL to use your own)`,
    stop: () => server.stop(),
  };
}
