import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
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
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = 'metered';
const GROUP = 'metering';
const REQUESTS = 'metered-sum';
const EVENTS = 'metered-burst';
const succeeded: string[] = [];
let burstHandled = 0;

@Controller()
class MeteredController {
  /** `ok`: succeeds. `flaky`: fails on its first delivery only. `poison`: always fails. */
  @EventPattern<string>(STREAM, { maxDeliveries: 2, minIdleTime: 200 })
  onEntry(@Payload() data: { kind: 'ok' | 'flaky' | 'poison' }, @Ctx() ctx: RedisStreamsContext): void {
    if (data.kind === 'poison' || (data.kind === 'flaky' && ctx.getDeliveryCount() === 1)) throw new RpcException(`${data.kind} failed`);
    succeeded.push(ctx.getId());
  }
}

@Controller()
class CardinalityController {
  @MessagePattern(REQUESTS)
  sum(@Payload() numbers: number[]): number {
    return numbers.reduce((a, b) => a + b, 0);
  }

  @EventPattern<string>(EVENTS)
  onBurst(): void {
    burstHandled += 1;
  }
}

/** What must never be a metric attribute: entry ids, UUIDs (correlation ids, reply streams). */
const ENTRY_ID = /^\d+-\d+$/;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
const PER_MESSAGE_KEYS = ['messaging.message.id', 'messaging.message.conversation_id', 'messaging.client.id'];

type Point = { attributes: Record<string, unknown>; value: unknown };
const pointsOf = (metric: MetricData): Point[] => metric.dataPoints as Point[];

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
      [MeteredController, CardinalityController],
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

  it('cardinality: 20 more sends and emits add no series (one per destination + operation); no id on any metric', async () => {
    /** `n` requests (each with its reply) and `n` events, then until all is handled and counted. */
    async function round(n: number, sentBefore: number): Promise<MetricData[]> {
      const handledBefore = burstHandled;
      for (let i = 0; i < n; i += 1) {
        expect(await lastValueFrom(client.send(REQUESTS, [i, 1]))).toBe(i + 1);
        await lastValueFrom(client.emit(EVENTS, { i }));
      }
      await waitFor(() => burstHandled === handledBefore + n, 'every event handled');
      await waitFor(async () => (await pendingCount(redis.client, REQUESTS, GROUP)) === 0 && (await pendingCount(redis.client, EVENTS, GROUP)) === 0, 'nothing pending');
      let all: MetricData[] = [];
      // The reply is counted once its XADD answered, which may be after the requester got it.
      await waitFor(async () => {
        all = await collect();
        return total(all, 'messaging.client.sent.messages') === sentBefore + 3 * n;
      }, 'every request, reply and event counted');
      return all;
    }
    const seriesPerMetric = (all: MetricData[]): Record<string, number> =>
      Object.fromEntries(all.map((metric) => [metric.descriptor.name, pointsOf(metric).length]));

    const sentBefore = total(await collect(), 'messaging.client.sent.messages');
    const first = seriesPerMetric(await round(1, sentBefore));
    const all = await round(20, sentBefore + 3);
    expect(seriesPerMetric(all)).toEqual(first);

    const sent = pointsOf(all.find((metric) => metric.descriptor.name === 'messaging.client.sent.messages') as MetricData);
    const requests = sent.filter((point) => point.attributes['messaging.destination.name'] === REQUESTS);
    const replies = sent.filter((point) => point.attributes['messaging.destination.temporary'] === true);
    expect(requests.map((point) => point.value)).toEqual([21]);
    expect(sent.filter((point) => point.attributes['messaging.destination.name'] === EVENTS).map((point) => point.value)).toEqual([21]);
    // The replies go to the client's reply stream (a UUID): one series under a template.
    expect(replies.map((point) => [point.value, point.attributes['messaging.destination.template']])).toEqual([[21, '(temporary)']]);
    expect(replies[0]?.attributes).not.toHaveProperty('messaging.destination.name');
    for (const point of [...requests, ...replies]) expect(point.attributes).toMatchObject({ 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' });

    const where = { 'messaging.destination.name': REQUESTS, 'messaging.consumer.group.name': GROUP };
    expect(total(all, 'redis_streams.processed.messages', where)).toBe(21);
    expect(total(all, 'messaging.process.duration', where)).toBe(21);
    expect(total(all, 'redis_streams.acked.messages', where)).toBe(21);

    for (const metric of all) {
      for (const point of pointsOf(metric)) {
        const where = `${metric.descriptor.name} ${JSON.stringify(point.attributes)}`;
        for (const key of PER_MESSAGE_KEYS) expect(point.attributes, where).not.toHaveProperty(key);
        for (const value of Object.values(point.attributes)) {
          if (typeof value !== 'string') continue;
          expect(value, where).not.toMatch(ENTRY_ID);
          expect(value, where).not.toMatch(UUID);
          expect(value, where).not.toContain(client.replyStream);
          expect(value, where).not.toBe('meter-1');
        }
      }
    }
  });
});
