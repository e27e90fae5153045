import type { RedisStreamsDashboardOptions } from '../../src/dashboard/index.js';
import type { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { startDashboardApp, type DashboardApp, type DashboardAppOptions } from './dashboard-app.js';
import type { RedisServerProcess } from './redis-server.js';

export interface DashboardAppHandle {
  /** The app `start` gave last (throws when none runs). */
  readonly app: DashboardApp;
  /** Closes the app running, if any, and starts `startDashboardApp` on the block's server. */
  start(dashboard?: RedisStreamsDashboardOptions, adapter?: 'express' | 'fastify', options?: DashboardAppOptions): Promise<DashboardApp>;
  /** Closes the app running, if any (again after each test). */
  close(): Promise<void>;
}

/**
 * The dashboard app of a describe block's tests, on `redis` (a `useRedisServer()`): after each
 * test the app is closed and Redis flushed, so that every test starts from an empty server. Call
 * it before `useDashboardBrowser`, whose afterEach (run first) screenshots a failing page while
 * the app still answers.
 */
export function useDashboardApp(redis: { readonly server: RedisServerProcess; readonly client: Redis }): DashboardAppHandle {
  let running: DashboardApp | undefined;
  const close = async (): Promise<void> => {
    const app = running;
    running = undefined;
    await app?.close();
  };
  afterEach(async () => {
    await close();
    await redis.client.flushall();
  });
  return {
    get app() {
      if (!running) throw new Error('useDashboardApp: no app runs (call start() first)');
      return running;
    },
    async start(dashboard = {}, adapter = 'express', options = {}) {
      await close();
      running = await startDashboardApp(redis.server.url, dashboard, adapter, options);
      return running;
    },
    close,
  };
}
