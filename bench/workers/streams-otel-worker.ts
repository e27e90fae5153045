// Worker child: our RedisStreamsServer with an OpenTelemetry SDK registered (traces and metrics
// recorded, then dropped): what telemetry costs when it is on. Compare with streams-worker.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveNestWorker } from './nest-worker.js';

/** Spans are built, batched and handed over, as with a real exporter, then dropped. */
const discard: SpanExporter = {
  export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
  shutdown: () => Promise.resolve(),
};
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] }));
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
metrics.setGlobalMeterProvider(
  new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1_000 })],
  }),
);

await serveNestWorker((config) => {
  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(config.options as Partial<RedisStreamsServerOptions> | undefined),
  };
  return { strategy: new RedisStreamsServer(options) };
});
