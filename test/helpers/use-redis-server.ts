import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { RedisServerProcess, type RedisServerOptions } from './redis-server.js';

/**
 * One private redis-server (and a client on it) for a describe block: started in beforeAll,
 * stopped in afterAll. Read `server` / `client` inside tests and hooks.
 */
export function useRedisServer(options: RedisServerOptions = {}): { readonly server: RedisServerProcess; readonly client: Redis } {
  let server: RedisServerProcess | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    server = await RedisServerProcess.start(options);
    client = server.client();
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });
  return {
    get server() {
      if (!server) throw new Error('useRedisServer: the server starts in beforeAll');
      return server;
    },
    get client() {
      if (!client) throw new Error('useRedisServer: the client is created in beforeAll');
      return client;
    },
  };
}
