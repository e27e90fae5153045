import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload, RpcException } from '@nestjs/microservices';
import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type HistogramMetricData,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../src/client/redis-streams-client.js';
import { RedisStreamsContext } from '../src/server/context.js';
import { pendingCount, startServer, type RunningServer } from './fixtures/server-app.js';
import { useRedisServer } from './helpers/use-redis-server.js';
import { waitFor } from './helpers/wait.js';

const STREAM = 'metered';
const GROUP = 'metering';
const succeeded: string[] = [];

@Controller()
class MeteredController {
  /** `ok`: succeeds. `flaky`: fails on its first delivery only. `poison`: always fails. */
  @EventPattern<string>(STREAM, { maxDeliveries: 2, minIdleTime: 200 })
  onEntry(@Payload() data: { kind: 'ok' | 'flaky' | 'poison' }, @Ctx() ctx: RedisStreamsContext): void {
    if (data.kind === 'poison' || (data.kind === 'flaky' && ctx.getDeliveryCount() === 1)) throw new RpcException(`${data.kind} failed`);
    succeeded.push(ctx.getId());
  }
}

describe('OpenTelemetry metrics (real SDK, real Redis): counted exactly for a run of known size', () => {
  const redis = useRedisServer();
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const provider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })] });
  let client: RedisStreamsClient;
  let running: RunningServer | undefined;

  beforeAll(async () => {
    metrics.setGlobalMeterProvider(provider);
    client = new RedisStreamsClient({ connection: redis.server.url });
    running = await startServer(
      {
        connection: redis.server.url,
        group: GROUP,
        consumer: 'meter-1',
        blockMs: 200,
        recovery: { interval: 100, minIdleTime: 200 },
        telemetry: { gaugeInterval: 100 },
      },
      [MeteredController],
    );
  });

  afterAll(async () => {
    await client.close();
    await running?.app.close();
    await provider.shutdown();
    metrics.disable();
  });

  async function collect(): Promise<MetricData[]> {
    exporter.reset();
    await provider.forceFlush();
    const exported = exporter.getMetrics();
    return exported.flatMap((resource) => resource.scopeMetrics.filter((scope) => scope.scope.name === 'nestjs-redis-streams').flatMap((scope) => scope.metrics));
  }

  /** Sum of a counter's (or gauge's) points whose attributes include `where`. */
  function total(all: MetricData[], name: string, where: Record<string, string> = {}): number {
    const metric = all.find((candidate) => candidate.descriptor.name === name);
    if (metric === undefined) return 0;
    return (metric.dataPoints as Array<{ attributes: Record<string, unknown>; value: unknown }>)
      .filter((point) => Object.entries(where).every(([key, value]) => point.attributes[key] === value))
      .reduce((sum, point) => sum + (typeof point.value === 'number' ? point.value : (point.value as { count: number }).count), 0);
  }

  it('N processed, K failed, D dead-lettered, R recovered; gauges sampled from Redis', async () => {
    const ok = 10;
    const flaky = 2;
    const kinds = [...Array.from({ length: ok }, () => 'ok'), ...Array.from({ length: flaky }, () => 'flaky'), 'poison'];
    for (const kind of kinds) await lastValueFrom(client.emit(STREAM, { kind }));

    await waitFor(async () => (await redis.client.xlen(`{${STREAM}}:dead`)) === 1, 'the poison entry dead-lettered', { timeout: 15_000 });
    await waitFor(() => succeeded.length === ok + flaky, 'every ok and flaky entry handled');
    await waitFor(async () => (await pendingCount(redis.client, STREAM, GROUP)) === 0, 'nothing pending');

    const where = { 'messaging.destination.name': STREAM, 'messaging.consumer.group.name': GROUP };
    let all: MetricData[] = [];
    // The gauges report the last sample of their timer (every 100 ms here): wait for one taken after the run.
    await waitFor(async () => {
      all = await collect();
      return total(all, 'redis_streams.dead_letter.size', where) === 1 && total(all, 'redis_streams.group.pending', where) === 0;
    }, 'a gauge sample after the run');

    expect(total(all, 'messaging.client.sent.messages', { 'messaging.destination.name': STREAM })).toBe(13);
    // 13 read, then recovery claimed the 2 flaky entries and the poison one once (its 2nd delivery).
    expect(total(all, 'redis_streams.recovered.messages', where)).toBe(3);
    expect(total(all, 'messaging.client.consumed.messages', where)).toBe(16);
    expect(total(all, 'redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'success' })).toBe(12);
    expect(total(all, 'redis_streams.processed.messages', { ...where, 'messaging.redis_streams.outcome': 'failure' })).toBe(4);
    expect(total(all, 'redis_streams.acked.messages', where)).toBe(12);
    expect(total(all, 'redis_streams.dead_lettered.messages', { ...where, 'messaging.redis_streams.reason': 'max_deliveries' })).toBe(1);
    expect(total(all, 'redis_streams.lost.messages', where)).toBe(0);

    const duration = all.find((metric) => metric.descriptor.name === 'messaging.process.duration') as HistogramMetricData;
    expect(duration.descriptor.unit).toBe('s');
    expect(total(all, 'messaging.process.duration', where)).toBe(16);
    expect(total(all, 'messaging.process.duration', { ...where, 'error.type': 'RpcException' })).toBe(4);

    expect(total(all, 'redis_streams.group.lag', where)).toBe(0);
    expect(total(all, 'redis_streams.group.pending', where)).toBe(0);
  });
});
