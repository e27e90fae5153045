// Worker child: the bench's Nest application served by the raw XREADGROUP + XACK loop
// (bench/nest-raw-loop.ts): Nest's own handler pipeline per entry, none of our transport's logic.
import { NestRawLoopServer } from '../nest-raw-loop.js';
import { serveNestWorker } from './nest-worker.js';

await serveNestWorker((config) => ({
  strategy: new NestRawLoopServer({ redisUrl: config.redisUrl, key: config.key, group: config.group, consumer: 'nest-raw-loop-worker' }),
}));
