// Producer child of the e2e telemetry contenders: the producer with an OpenTelemetry SDK of its own
// (the bench process must stay without one: every other contender produces from it). Options:
// `client` `streams` (RedisStreamsClient.emit) or `raw` (XADD with the SDK work one traced emit
// needs: a PRODUCER span, `propagation.inject` into the `headers` field, the span ended with the
// entry id, one `messaging.client.sent.messages` add: the floor of ours); `otel` `none`, `traces`
// or `sampled` (otel-sdk.ts); `total`, `inFlight`, `maxLen`. Reports the shared clock's readings
// at its first send and after its last reply (clock.ts), so start-up is not timed.
import { context, metrics, propagation, SpanKind, trace, type Attributes } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient } from '../../src/index.js';
import { nowNs } from '../clock.js';
import { makePayload } from '../payload.js';
import { sendInFlight } from '../producers.js';
import type { WorkerConfig } from '../protocol.js';
import { runOnce } from './harness.js';
import { benchTelemetryOf, registerBenchOpenTelemetry } from './otel-sdk.js';

const SCOPE = 'nestjs-redis-streams';

interface Producer {
  send(): Promise<unknown>;
  close(): Promise<void>;
}

async function streamsProducer(config: WorkerConfig): Promise<Producer> {
  const client = new RedisStreamsClient({ connection: config.redisUrl });
  await client.connect();
  return { send: () => lastValueFrom(client.emit(config.key, makePayload())), close: () => client.close() };
}

/** Raw XADD in the default wire format; with `traced`, the SDK's per-emit work as our client does it. */
function rawProducer(config: WorkerConfig, maxLen: number, traced: boolean): Producer {
  const redis = new Redis(config.redisUrl, { enableAutoPipelining: true });
  const { key } = config;
  const cap = String(maxLen);
  const xadd = (...extra: string[]) => redis.xadd(key, 'MAXLEN', '~', cap, '*', 'pattern', key, 'data', JSON.stringify(makePayload()), ...extra);
  const close = async () => {
    await redis.quit();
  };
  if (!traced) return { send: () => xadd(), close };
  const tracer = trace.getTracer(SCOPE);
  const sent = metrics.getMeter(SCOPE).createCounter('messaging.client.sent.messages', { unit: '{message}' });
  const system = { 'messaging.system': 'redis_streams', 'messaging.system.name': 'redis_streams' };
  const attributes: Attributes = { ...system, 'messaging.operation.type': 'send', 'messaging.operation.name': 'send', 'messaging.destination.name': key };
  const spanName = `send ${key}`;
  return {
    send: async () => {
      const active = context.active();
      const span = tracer.startSpan(spanName, { kind: SpanKind.PRODUCER, attributes }, active);
      const headers: Record<string, string> = {};
      propagation.inject(trace.setSpan(active, span), headers);
      const id = await xadd('headers', JSON.stringify(headers));
      sent.add(1, attributes);
      if (span.isRecording() && typeof id === 'string') span.setAttribute('messaging.message.id', id);
      span.end();
      return id;
    },
    close,
  };
}

await runOnce(async (config) => {
  const options = config.options ?? {};
  const otel = options.otel === 'none' ? undefined : benchTelemetryOf(options.otel);
  if (otel !== undefined) registerBenchOpenTelemetry(otel);
  const producer = options.client === 'raw' ? rawProducer(config, Number(options.maxLen), otel !== undefined) : await streamsProducer(config);
  const cpuBefore = process.cpuUsage();
  const startedAt = nowNs();
  await sendInFlight(Number(options.total), Number(options.inFlight), producer.send);
  const producedAt = nowNs();
  const cpu = process.cpuUsage(cpuBefore);
  await producer.close();
  return { startedAt, producedAt, producerCpuMs: (cpu.user + cpu.system) / 1000 };
});
