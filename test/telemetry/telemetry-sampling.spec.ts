import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { context, metrics, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, ParentBasedSampler, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = 'sampled-orders';
const handled: string[] = [];

@Controller()
class SampledController {
  @EventPattern<string>(STREAM)
  onOrder(data: { label: string }): void {
    // A span of the user's own: it follows the process span's sampling decision.
    trace.getTracer('user').startSpan('user work').end();
    handled.push(data.label);
  }
}

/** A caller's context whose trace was not sampled (as a 1 % ratio sampler decides for 99 % of the requests). */
function unsampledCaller() {
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.NONE, isRemote: true });
}

describe('OpenTelemetry with a parent-based sampler (real SDK, real Redis)', () => {
  const redis = useRedisServer();
  const spans = new InMemorySpanExporter();
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })] });
  let client: RedisStreamsClient;
  let running: RunningServer | undefined;

  beforeAll(async () => {
    // Roots sampled; everything else as its parent was: the decision travels in the trace headers.
    const sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() });
    trace.setGlobalTracerProvider(new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(spans)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    metrics.setGlobalMeterProvider(meterProvider);
    client = new RedisStreamsClient({ connection: redis.server.url });
    running = await startServer({ connection: redis.server.url, group: 'sampling', consumer: 'sampling-1', blockMs: 200 }, [SampledController]);
  });

  afterAll(async () => {
    await client.close();
    await running?.app.close();
    await meterProvider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
    metrics.disable();
  });

  async function processedCount(): Promise<number> {
    metricExporter.reset();
    await meterProvider.forceFlush();
    const all: MetricData[] = metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    const processed = all.find((metric) => metric.descriptor.name === 'redis_streams.processed.messages');
    return (processed?.dataPoints ?? []).reduce((sum, point) => sum + (point.value as number), 0);
  }

  it('an emit from an unsampled request: no span anywhere (producer, process, the handler\'s own), the entry still counted', async () => {
    await context.with(unsampledCaller(), () => lastValueFrom(client.emit(STREAM, { label: 'unsampled' })));
    await waitFor(() => handled.includes('unsampled'), 'the unsampled entry handled');
    await waitFor(async () => (await processedCount()) === 1, 'the unsampled entry counted');
    expect(spans.getFinishedSpans().map((span) => span.name)).toEqual([]);

    // The same emit from a sampled root: every span is there, with the per-entry attributes.
    await lastValueFrom(client.emit(STREAM, { label: 'sampled' }));
    await waitFor(() => spans.getFinishedSpans().some((span) => span.name === 'user work'), 'the sampled entry handled');
    expect(spans.getFinishedSpans().map((span) => span.name).sort()).toEqual([`process ${STREAM}`, `send ${STREAM}`, 'user work']);
    const processSpan = spans.getFinishedSpans().find((span) => span.name === `process ${STREAM}`);
    expect(processSpan?.attributes).toMatchObject({ 'messaging.client.id': 'sampling-1', 'messaging.redis_streams.message.delivery_count': 1, 'messaging.redis_streams.outcome': 'success' });
    expect(processSpan?.attributes['messaging.message.id']).toMatch(/^\d+-\d+$/);
    await waitFor(async () => (await processedCount()) === 2, 'both entries counted');
  });
});
