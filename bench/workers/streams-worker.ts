// Worker child: our RedisStreamsServer with the bench's handlers.
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveNestWorker } from './nest-worker.js';

await serveNestWorker((config) => {
  // `leaseThread: false` (flat, as bench options are): leases renewed on the event loop;
  // `leases: false`: no lease renewal at all (the read/handle/ack path alone).
  const { leaseThread, leases, ...given } = config.options ?? {};
  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(given as Partial<RedisStreamsServerOptions>),
    ...(leaseThread === false ? { recovery: { leases: { thread: false } } } : {}),
    ...(leases === false ? { recovery: { leases: false } } : {}),
  };
  return { strategy: new RedisStreamsServer(options) };
});
