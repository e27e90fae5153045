// Worker child: our RedisStreamsServer with an OpenTelemetry SDK registered (traces and metrics
// recorded, then dropped): what telemetry costs when it is on. Compare with streams-worker, and
// with raw-otel-worker (the same SDK work per entry on the raw loop: the floor).
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveNestWorker } from './nest-worker.js';
import { registerBenchOpenTelemetry } from './otel-sdk.js';

registerBenchOpenTelemetry();

await serveNestWorker((config) => {
  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(config.options as Partial<RedisStreamsServerOptions> | undefined),
  };
  return { strategy: new RedisStreamsServer(options) };
});
