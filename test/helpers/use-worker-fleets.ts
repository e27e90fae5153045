import type { Redis } from 'ioredis';
import { afterEach, beforeAll } from 'vitest';
import { ensureCompiled } from './compiled.js';
import type { RedisServerProcess } from './redis-server.js';
import { useRedisServer } from './use-redis-server.js';
import { WorkerFleet } from './worker-fleet.js';

/**
 * For crash tests with worker processes: one private redis-server and a client on it for the
 * describe block, the compiled fixtures, and `fleet(config)`, whose fleets are stopped (every
 * worker killed) after each test.
 */
export function useWorkerFleets(): { readonly redis: RedisServerProcess; readonly client: Redis; fleet(config: Record<string, unknown>): WorkerFleet } {
  const redis = useRedisServer();
  const fleets: WorkerFleet[] = [];
  beforeAll(ensureCompiled, 240_000);
  afterEach(async () => {
    await Promise.all(fleets.splice(0).map((fleet) => fleet.stop()));
  });
  return {
    get redis() {
      return redis.server;
    },
    get client() {
      return redis.client;
    },
    fleet(config) {
      const fleet = new WorkerFleet(config);
      fleets.push(fleet);
      return fleet;
    },
  };
}
