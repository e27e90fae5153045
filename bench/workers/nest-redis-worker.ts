// Worker child: NestJS' built-in Redis (pub/sub) transport with the bench's handlers.
import { Transport } from '@nestjs/microservices';
import { serveNestWorker } from './nest-worker.js';

await serveNestWorker((config) => {
  const url = new URL(config.redisUrl);
  return { transport: Transport.REDIS, options: { host: url.hostname, port: Number(url.port) } };
});
