import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { promoteDue } from '../../src/delayed/promote.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const STREAM = 'metered-later';

@Controller()
class LaterController {
  @EventPattern<string>(STREAM)
  onLater(): void {}
}

describe('delayed gauges (real SDK, real Redis): held entries, and those due but not promoted', () => {
  const redis = useRedisServer();
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const provider = new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })] });
  let client: RedisStreamsClient;
  let running: RunningServer | undefined;

  beforeAll(async () => {
    metrics.setGlobalMeterProvider(provider);
    client = new RedisStreamsClient({ connection: redis.server.url });
    // This worker promotes nothing: what is due stays due, for the gauge to show.
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'm', blockMs: 200, delayed: false, telemetry: { gaugeInterval: 100 } }, [LaterController]);
  });
  afterAll(async () => {
    await client.close();
    await running?.app.close();
    await provider.shutdown();
    metrics.disable();
  });

  async function gauge(name: string): Promise<number | undefined> {
    exporter.reset();
    await provider.forceFlush();
    const all: MetricData[] = exporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    const points = all.find((metric) => metric.descriptor.name === name)?.dataPoints as { attributes: Record<string, unknown>; value: number }[] | undefined;
    return points?.find((point) => point.attributes['messaging.destination.name'] === STREAM && point.attributes['messaging.consumer.group.name'] === 'g')?.value;
  }

  it('redis_streams.delayed.size and redis_streams.delayed.due follow the held entries', async () => {
    for (const options of [{ deliverAt: 0 }, { deliverAt: 1 }, { delay: 'PT1H' }]) await lastValueFrom(client.emit(STREAM, new RedisStreamsRecord({}, options)));
    await waitFor(async () => (await gauge('redis_streams.delayed.size')) === 3 && (await gauge('redis_streams.delayed.due')) === 2, 'a sample: 3 held, 2 of them due');
    await promoteDue(redis.client, STREAM);
    await waitFor(async () => (await gauge('redis_streams.delayed.size')) === 1 && (await gauge('redis_streams.delayed.due')) === 0, 'a sample after the promotion: 1 held, none due');
  });
});
