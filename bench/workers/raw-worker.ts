// Worker child: the raw ioredis XREADGROUP + XACK loop (XACKDEL with the option `ack: 'xackdel'`).
import { Redis } from 'ioredis';
import { ensureGroup, RawConsumerLoop } from '../raw-loop.js';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const redis = new Redis(config.redisUrl);
  await ensureGroup(redis, config.key, config.group);
  const loop = new RawConsumerLoop(redis, config.key, config.group, 'raw-worker', (payload) => probe.onMessage(payload), 100, config.options?.ack === 'xackdel');
  return {
    start: async () => loop.start(),
    stop: async () => {
      await loop.stop();
      await redis.quit();
    },
  };
});
