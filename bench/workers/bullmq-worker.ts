// Worker child: a BullMQ Worker (concurrency 50) whose processor does nothing but count.
import { Worker } from 'bullmq';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const url = new URL(config.redisUrl);
  const worker = new Worker(config.key, async (job) => probe.onMessage(job.data), {
    connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
    concurrency: Number(config.options?.concurrency ?? 50),
    autorun: false,
  });
  worker.on('error', (error) => console.error('bullmq worker error', error));
  await worker.waitUntilReady();
  return {
    start: async () => {
      void worker.run();
    },
    stop: () => worker.close(),
  };
});
