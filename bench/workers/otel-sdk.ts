// The OpenTelemetry SDK of the bench's telemetry contenders (streams-otel-worker, raw-otel-worker,
// otel-producer): one set-up, so "telemetry on" means the same SDK work in all of them.
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator } from '@opentelemetry/core';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/**
 * What is registered: `traces` (traces and metrics, every span sampled), `sampled` (the same with
 * the recommended production sampler: parent-based, 1 % of new traces), `metrics` (a meter
 * provider only, no tracer provider).
 */
export type BenchTelemetry = 'traces' | 'sampled' | 'metrics';

export function benchTelemetryOf(value: unknown): BenchTelemetry {
  return value === 'sampled' || value === 'metrics' ? value : 'traces';
}

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
export function registerBenchOpenTelemetry(mode: BenchTelemetry = 'traces'): void {
  if (mode !== 'metrics') {
    const sampler = mode === 'sampled' ? new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }) : undefined;
    trace.setGlobalTracerProvider(new BasicTracerProvider({ ...(sampler ? { sampler } : {}), spanProcessors: [new BatchSpanProcessor(discard)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }
  metrics.setGlobalMeterProvider(
    new MeterProvider({
      readers: [new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA), exportIntervalMillis: 1_000 })],
    }),
  );
}
