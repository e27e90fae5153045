import type { RedisOptions } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { AUDIT_GROUP, seedStream } from '../helpers/dashboard-app.js';
import { ADAPTERS, getJson } from '../helpers/dashboard-http.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

const PASSWORD = 'unreachable-s3cret-pass';
const STREAM = 'unreachable-orders';
const ignore = (): void => undefined;

/**
 * The module's connection (the dashboard's) failing for Redis' sake, not for a request's: every
 * read that needs Redis is a 503 whose message says why (the page shows it), cleaned of the
 * password and of where the connection goes, instead of Nest's generic 500.
 */
describe('dashboard while Redis does not answer or is gone: 503 with the reason (Express and Fastify)', () => {
  const redis = useRedisServer({ password: PASSWORD });
  const dashboard = useDashboardApp(redis);

  const moduleConnection = (options: RedisOptions): RedisOptions => ({ host: '127.0.0.1', port: redis.server.port, password: PASSWORD, ...options });

  /** The overview, a stream's dead letters and a group's pending entries, as the page asks for them. */
  async function reads(adapter: (typeof ADAPTERS)[number], connection: RedisOptions, fault: () => Promise<void>, repair: () => Promise<void>) {
    await seedStream(redis.client, STREAM, { entries: 3, pending: 1, deadLetters: 1 });
    const app = await dashboard.start({ streams: [STREAM] }, adapter, { connection: moduleConnection(connection), worker: false });
    // Up, the same reads answer.
    expect((await getJson(app, 'overview')).status).toBe(200);
    await fault();
    try {
      const answers = [await getJson(app, 'overview'), await getJson(app, 'dead-letters', { stream: STREAM }), await getJson(app, 'pending', { stream: STREAM, group: AUDIT_GROUP })];
      for (const answer of answers) {
        const text = JSON.stringify(answer.body);
        expect(text).not.toContain(PASSWORD);
        expect(text).not.toContain(`127.0.0.1:${redis.server.port}`);
      }
      return answers.map(({ status, body }) => ({ status, body }));
    } finally {
      await repair();
    }
  }

  it.each(ADAPTERS)('%s: Redis paused (SIGSTOP) past commandTimeout answers 503 "Command timed out"', async (adapter) => {
    const answers = await reads(
      adapter,
      { commandTimeout: 500 },
      async () => redis.server.pause(),
      async () => redis.server.resume(),
    );
    expect(answers).toEqual(Array.from({ length: 3 }, () => ({ status: 503, body: { statusCode: 503, error: 'Service Unavailable', message: 'Command timed out' } })));
  }, 30_000);

  it.each(ADAPTERS)('%s: Redis gone (killed) answers 503 naming maxRetriesPerRequest', async (adapter) => {
    const answers = await reads(
      adapter,
      { maxRetriesPerRequest: 0 },
      async () => {
        // The block's admin client reconnects meanwhile: its refused attempts are expected.
        redis.client.on('error', ignore);
        await redis.server.kill();
      },
      async () => {
        await redis.server.restart();
        redis.client.off('error', ignore);
      },
    );
    const message = 'Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.';
    expect(answers).toEqual(Array.from({ length: 3 }, () => ({ status: 503, body: { statusCode: 503, error: 'Service Unavailable', message } })));
  }, 30_000);
});
