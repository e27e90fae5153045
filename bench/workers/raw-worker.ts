// Worker child: the raw ioredis XREADGROUP + XACK loop.
import { Redis } from 'ioredis';
import { ensureGroup, RawConsumerLoop } from '../raw-loop.js';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const redis = new Redis(config.redisUrl);
  await ensureGroup(redis, config.key, config.group);
  const loop = new RawConsumerLoop(redis, config.key, config.group, 'raw-worker', (payload) => probe.onMessage(payload));
  return {
    start: async () => loop.start(),
    stop: async () => {
      await loop.stop();
      await redis.quit();
    },
  };
});
