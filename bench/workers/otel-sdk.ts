// The OpenTelemetry SDK of the bench's telemetry contenders (streams-otel-worker, raw-otel-worker):
// one set-up, so "telemetry on" means the same SDK work in both.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Spans are built, batched and handed over, as with a real exporter, then dropped. */
const discard: SpanExporter = {
  export: (_spans, done) => done({ code: ExportResultCode.SUCCESS }),
  shutdown: () => Promise.resolve(),
};

/**
 * Registers the global tracer provider (batch span processor, dropping exporter), the async-hooks
 * context manager, the W3C propagator and a meter provider read every second (delta, in memory).
 * Call it before anything asks the API for a tracer or meter.
 */
export function registerBenchOpenTelemetry(): void {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] }));
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  metrics.setGlobalMeterProvider(
    new MeterProvider({
      readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1_000 })],
    }),
  );
}
