// Worker child: our RedisStreamsServer with the bench's handlers.
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveNestWorker } from './nest-worker.js';

await serveNestWorker((config) => {
  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(config.options as Partial<RedisStreamsServerOptions> | undefined),
  };
  return { strategy: new RedisStreamsServer(options) };
});
