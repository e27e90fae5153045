// Worker child: our RedisStreamsServer with an OpenTelemetry SDK registered (traces and metrics
// recorded, then dropped): what telemetry costs when it is on. Compare with streams-worker, and
// with raw-otel-worker (the same SDK work per entry on the raw loop: the floor). Option `otel`:
// `traces` (default), `sampled` (parent-based, 1 %) or `metrics` (otel-sdk.ts); option `batch`:
// the batch handler of streams-batch-worker instead of one call per entry.
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { workerConfig } from './harness.js';
import { benchTelemetryOf, registerBenchOpenTelemetry } from './otel-sdk.js';

const { otel, batch } = workerConfig().options ?? {};
registerBenchOpenTelemetry(benchTelemetryOf(otel));

if (batch === true) {
  await import('./streams-batch-worker.js');
} else {
  const { serveNestWorker } = await import('./nest-worker.js');
  await serveNestWorker((config) => {
    const { otel: _otel, batch: _batch, ...rest } = config.options ?? {};
    const options: RedisStreamsServerOptions = {
      connection: config.redisUrl,
      group: config.group,
      consumer: 'bench-worker',
      ...(rest as Partial<RedisStreamsServerOptions>),
    };
    return { strategy: new RedisStreamsServer(options) };
  });
}
