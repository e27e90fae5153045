import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { lastValueFrom } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const GROUP = 'batching';
const batches: Record<string, string[][]> = {};

class BatchFailure extends Error {
  override name = 'BatchFailure';
}

/** Batches of 10 (recovery off: a failed entry stays pending, no redelivery to count). */
@Controller()
class BatchController {
  @EventPattern<string>('batch-ok', { batch: { size: 10, waitMs: 2_000 }, recovery: false })
  onOk(@Payload() _payloads: unknown[], @Ctx() ctx: RedisStreamsBatchContext): void {
    trace.getTracer('user').startSpan('user work').end();
    (batches['batch-ok'] ??= []).push(ctx.getIds());
  }

  @EventPattern<string>('batch-partial', { batch: { size: 10, waitMs: 2_000 }, recovery: false })
  onPartial(@Payload() _payloads: unknown[], @Ctx() ctx: RedisStreamsBatchContext): void {
    ctx.fail(2, new BatchFailure('entry 2 is bad'));
    (batches['batch-partial'] ??= []).push(ctx.getIds());
  }

  @EventPattern<string>('batch-thrown', { batch: { size: 10, waitMs: 2_000 }, recovery: false })
  onThrown(@Payload() _payloads: unknown[], @Ctx() ctx: RedisStreamsBatchContext): void {
    (batches['batch-thrown'] ??= []).push(ctx.getIds());
    throw new BatchFailure('the whole batch failed');
  }
}

describe('OpenTelemetry of batch handlers (real SDK, real Redis): one span per batch, linked to every producer', () => {
  const redis = useRedisServer();
  const spans = new InMemorySpanExporter();
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const meterProvider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })] });
  let client: RedisStreamsClient;
  let running: RunningServer | undefined;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    metrics.setGlobalMeterProvider(meterProvider);
    client = new RedisStreamsClient({ connection: redis.server.url });
    running = await startServer({ connection: redis.server.url, group: GROUP, consumer: 'batcher-1', blockMs: 200 }, [BatchController]);
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

  afterEach(() => spans.reset());

  const named = (name: string): ReadableSpan[] => spans.getFinishedSpans().filter((span) => span.name === name);

  /** Ten emits at once (one batch), each in a trace of its own; resolves with their send spans once the batch span ended. */
  async function emitBatch(stream: string): Promise<{ ids: string[]; sends: ReadableSpan[]; batch: ReadableSpan }> {
    const ids = (await Promise.all(Array.from({ length: 10 }, (_, n) => lastValueFrom(client.emit(stream, { n }))))) as string[];
    await waitFor(() => named(`process ${stream}`).length === 1, 'the batch span');
    expect(batches[stream]?.map((batch) => batch.length)).toEqual([10]);
    return { ids, sends: named(`send ${stream}`), batch: named(`process ${stream}`)[0] as ReadableSpan };
  }

  async function total(name: string, where: Record<string, string>): Promise<number> {
    metricExporter.reset();
    await meterProvider.forceFlush();
    const all: MetricData[] = metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    const points = (all.find((metric) => metric.descriptor.name === name)?.dataPoints ?? []) as Array<{ attributes: Record<string, unknown>; value: unknown }>;
    return points
      .filter((point) => Object.entries(where).every(([key, value]) => point.attributes[key] === value))
      .reduce((sum, point) => sum + (typeof point.value === 'number' ? point.value : (point.value as { count: number }).count), 0);
  }

  it('a batch of 10: one CONSUMER span with 10 links to the producer spans, the handler inside it; counted per entry, timed once', async () => {
    const { ids, sends, batch } = await emitBatch('batch-ok');
    expect(named('process batch-ok')).toHaveLength(1);
    expect(batch.kind).toBe(SpanKind.CONSUMER);
    // Ten producers, ten traces: none of them is the batch's parent.
    expect(batch.parentSpanContext).toBeUndefined();
    expect(new Set(sends.map((send) => send.spanContext().traceId)).size).toBe(10);
    expect(batch.links.map((link) => link.context.spanId).sort()).toEqual(sends.map((send) => send.spanContext().spanId).sort());
    expect(batch.links.map((link) => link.attributes?.['messaging.message.id']).sort()).toEqual([...ids].sort());
    expect(batch.attributes).toMatchObject({
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'batch-ok',
      'messaging.consumer.group.name': GROUP,
      'messaging.batch.message_count': 10,
      'messaging.client.id': 'batcher-1',
      'messaging.redis_streams.outcome': 'success',
    });
    expect(batch.attributes).not.toHaveProperty('messaging.message.id');
    expect(named('user work')[0]?.parentSpanContext?.spanId).toBe(batch.spanContext().spanId);

    const where = { 'messaging.destination.name': 'batch-ok', 'messaging.consumer.group.name': GROUP };
    await waitFor(async () => (await total('redis_streams.acked.messages', where)) === 10, 'the batch acked');
    expect(await total('redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'success' })).toBe(10);
    expect(await total('messaging.process.duration', where)).toBe(1);
  });

  it('ctx.fail() on one entry: the batch span says failure with the failed count; the counter splits 9 / 1', async () => {
    const { batch } = await emitBatch('batch-partial');
    expect(batch.attributes).toMatchObject({ 'messaging.redis_streams.outcome': 'failure', 'messaging.redis_streams.batch.failed_count': 1 });
    const where = { 'messaging.destination.name': 'batch-partial', 'messaging.consumer.group.name': GROUP };
    await waitFor(async () => (await total('redis_streams.processed.messages', where)) === 10, 'the batch counted');
    expect(await total('redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'success' })).toBe(9);
    expect(await total('redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'failure' })).toBe(1);
    expect(await pendingCount(redis.client, 'batch-partial', GROUP)).toBe(1);
  });

  it('a handler that throws: an ERROR span with the exception, every entry counted failed, one duration with error.type', async () => {
    const { batch } = await emitBatch('batch-thrown');
    expect(batch.status).toEqual({ code: SpanStatusCode.ERROR, message: 'the whole batch failed' });
    expect(batch.attributes).toMatchObject({ 'messaging.redis_streams.outcome': 'failure', 'messaging.redis_streams.batch.failed_count': 10, 'error.type': 'BatchFailure' });
    expect(batch.events.map((event) => event.name)).toEqual(['exception']);
    const where = { 'messaging.destination.name': 'batch-thrown', 'messaging.consumer.group.name': GROUP };
    await waitFor(async () => (await total('redis_streams.processed.messages', where)) === 10, 'the batch counted');
    expect(await total('redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'failure' })).toBe(10);
    expect(await total('messaging.process.duration', { ...where, 'error.type': 'BatchFailure' })).toBe(1);
  });
});
