// Worker child: the floor of telemetry. The raw XREADGROUP + XACK loop (raw-worker) with the same
// OpenTelemetry SDK as streams-otel-worker (otel-sdk.ts), doing per entry only the SDK work one
// handled entry needs: the W3C trace context extracted from the entry's `headers` field, a CONSUMER
// span `process <stream>` with the attributes our telemetry sets (src/telemetry/telemetry.ts,
// destination-attributes.ts), the handler run inside it (context.with), the span ended, one
// `messaging.process.duration` record and one `redis_streams.processed.messages` add. raw-otel →
// streams-otel is what our transport and our telemetry code add on top of the SDK's own cost.
import { context, metrics, propagation, ROOT_CONTEXT, SpanKind, trace, type Attributes, type TextMapGetter } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { ensureGroup, RawConsumerLoop } from '../raw-loop.js';
import { serveWorker } from './harness.js';
import { registerBenchOpenTelemetry } from './otel-sdk.js';

registerBenchOpenTelemetry();

const SCOPE = 'nestjs-redis-streams';
const CONSUMER = 'raw-otel-worker';

type Headers = Record<string, string>;
const NO_HEADERS: Headers = {};

/** The producer's headers (a JSON object in the `headers` field, as our wire format writes them), or none. */
function headersOf(fields: string[]): Headers {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'headers') return JSON.parse(fields[i + 1] as string) as Headers;
  }
  return NO_HEADERS;
}

const getter: TextMapGetter<Headers> = {
  get: (carrier, key) => carrier[key],
  keys: (carrier) => Object.keys(carrier),
};

class RawOtelLoop extends RawConsumerLoop {
  private readonly tracer = trace.getTracer(SCOPE);
  private readonly duration;
  private readonly processed;
  private readonly spanName: string;
  /** The process span's attributes before the ids, and the duration's (as destination-attributes.ts builds them). */
  private readonly process: Attributes;
  private readonly succeeded: Attributes;

  constructor(redis: Redis, key: string, group: string, handle: (payload: unknown) => void) {
    super(redis, key, group, CONSUMER, handle);
    const meter = metrics.getMeter(SCOPE);
    this.duration = meter.createHistogram('messaging.process.duration', { unit: 's', description: 'Duration of handling one entry' });
    this.processed = meter.createCounter('redis_streams.processed.messages', { unit: '{message}', description: 'Entries handled, by outcome (success, failure)' });
    const system = { 'messaging.system': 'redis_streams', 'messaging.system.name': 'redis_streams' };
    this.process = { ...system, 'messaging.destination.name': key, 'messaging.consumer.group.name': group, 'messaging.operation.type': 'process', 'messaging.operation.name': 'process' };
    this.succeeded = { ...this.process, 'messaging.redis_streams.outcome': 'success' };
    this.spanName = `process ${key}`;
  }

  protected override handleEntry(id: string, fields: string[]): void {
    const parent = propagation.extract(ROOT_CONTEXT, headersOf(fields), getter);
    const span = this.tracer.startSpan(
      this.spanName,
      {
        kind: SpanKind.CONSUMER,
        attributes: { ...this.process, 'messaging.message.id': id, 'messaging.client.id': CONSUMER, 'messaging.redis_streams.message.delivery_count': 1 },
      },
      parent,
    );
    const start = performance.now();
    context.with(trace.setSpan(parent, span), () => super.handleEntry(id, fields));
    this.duration.record((performance.now() - start) / 1000, this.process);
    this.processed.add(1, this.succeeded);
    span.setAttribute('messaging.redis_streams.outcome', 'success');
    span.end();
  }
}

await serveWorker(async (probe, config) => {
  const redis = new Redis(config.redisUrl);
  await ensureGroup(redis, config.key, config.group);
  const loop = new RawOtelLoop(redis, config.key, config.group, (payload) => probe.onMessage(payload));
  return {
    start: async () => loop.start(),
    stop: async () => {
      await loop.stop();
      await redis.quit();
    },
  };
});
