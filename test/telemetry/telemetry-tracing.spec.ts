import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { lastValueFrom, of, toArray } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { Telemetry } from '../../src/telemetry/telemetry.js';
import { openTelemetryApiRequested } from '../../src/telemetry/opentelemetry-api.js';
import { resolveTelemetryOptions } from '../../src/telemetry/telemetry-options.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { ensureCompiled } from '../helpers/compiled.js';
import { waitFor } from '../helpers/wait.js';
import { WorkerFleet } from '../helpers/worker-fleet.js';

const handled: Array<{ stream: string; id: string; headers: Record<string, string> }> = [];

@Controller()
class TracedController {
  @EventPattern<string>('traced-orders')
  async onOrder(@Payload() _order: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    // A span of the user's own: it must nest under the process span.
    await trace.getTracer('user').startActiveSpan('user work', async (span) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      span.end();
    });
    handled.push({ stream: ctx.getStream(), id: ctx.getId(), headers: { ...ctx.getHeaders() } });
  }

  @EventPattern<string>('traced-poison', { maxDeliveries: 2, minIdleTime: 200 })
  onPoison(): void {
    throw new RpcException('poison');
  }

  @EventPattern<string>('traced-raw', { raw: true })
  onRaw(@Ctx() ctx: RedisStreamsContext): void {
    handled.push({ stream: ctx.getStream(), id: ctx.getId(), headers: {} });
  }

  @MessagePattern('traced-sum')
  sum(@Payload() numbers: number[]): number {
    return numbers.reduce((a, b) => a + b, 0);
  }

  @MessagePattern('traced-stream')
  stream(@Payload() numbers: number[]) {
    return of(...numbers);
  }
}

const recoveredDeliveries: number[] = [];

const ENTRY_ID = /\d+-\d+/;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;
/** Consumer names of the servers below: per pod, so never in a span name either. */
const CONSUMERS = ['traced-1', 'untraced-1', 'rescuer'];

function expectLowCardinalityName(name: string, replyStream: string): void {
  expect(name, 'an entry id in a span name').not.toMatch(ENTRY_ID);
  expect(name, 'a UUID (correlation id, reply stream) in a span name').not.toMatch(UUID);
  expect(name, 'the reply stream in a span name').not.toContain(replyStream);
  for (const consumer of CONSUMERS) expect(name, 'a consumer name in a span name').not.toContain(consumer);
}

/** Takes over what the crashed worker process left pending (group "crashers"). */
@Controller()
class CrashRecoveryController {
  @EventPattern<string>('traced-crash')
  onCrashed(@Ctx() ctx: RedisStreamsContext): void {
    recoveredDeliveries.push(ctx.getDeliveryCount());
  }
}

describe('telemetry without a registered provider', () => {
  it('is not loaded: the server and client hold no telemetry and pay nothing per entry', async () => {
    expect(await Telemetry.load(resolveTelemetryOptions(undefined))).toBeUndefined();
    // Not even imported: listen() must not pay a module load for nothing (it delayed recovery tests).
    expect(openTelemetryApiRequested()).toBe(false);
  });
});

describe('OpenTelemetry tracing (real SDK, real Redis)', () => {
  const redis = useRedisServer();
  const exporter = new InMemorySpanExporter();
  const running: RunningServer[] = [];
  let client: RedisStreamsClient;

  beforeAll(async () => {
    await ensureCompiled();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    client = new RedisStreamsClient({ connection: redis.server.url });
    running.push(
      await startServer(
        { connection: redis.server.url, group: 'traced', consumer: 'traced-1', blockMs: 200, recovery: { interval: 100, minIdleTime: 200 } },
        [TracedController],
      ),
    );
  }, 240_000);

  afterAll(async () => {
    await client.close();
    for (const r of running.splice(0)) await r.app.close();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  afterEach(() => {
    // Whatever the test did: every span name is one of a few per stream, never per message or client.
    for (const name of new Set(spans().map((span) => span.name))) expectLowCardinalityName(name, client.replyStream);
    exporter.reset();
    handled.length = 0;
  });

  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const named = (name: string): ReadableSpan[] => spans().filter((span) => span.name === name);
  const one = (name: string): ReadableSpan => {
    const found = named(name);
    expect(found, `spans named "${name}": ${spans().map((span) => span.name).join(', ')}`).toHaveLength(1);
    return found[0] as ReadableSpan;
  };

  it('one emit, one handler: a PRODUCER and a CONSUMER span in one trace; the handler runs inside the process span', async () => {
    let entryId: string | null = null;
    await trace.getTracer('test').startActiveSpan('POST /orders', async (http) => {
      entryId = await lastValueFrom(client.emit('traced-orders', { item: 'kettle' }));
      http.end();
    });
    await waitFor(() => named('process traced-orders').length === 1, 'the process span');

    const http = one('POST /orders');
    const send = one('send traced-orders');
    const processSpan = one('process traced-orders');
    const user = one('user work');
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(processSpan.kind).toBe(SpanKind.CONSUMER);
    const traceId = http.spanContext().traceId;
    for (const span of [send, processSpan, user]) expect(span.spanContext().traceId).toBe(traceId);
    expect(send.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
    expect(processSpan.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
    expect(user.parentSpanContext?.spanId).toBe(processSpan.spanContext().spanId);

    expect(send.attributes).toMatchObject({
      'messaging.system': 'redis_streams',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'traced-orders',
      'messaging.message.id': entryId,
    });
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': 'redis_streams',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': 'traced-orders',
      'messaging.consumer.group.name': 'traced',
      'messaging.message.id': entryId,
      'messaging.client.id': 'traced-1',
      'messaging.redis_streams.message.delivery_count': 1,
      'messaging.redis_streams.outcome': 'success',
    });
    expect(processSpan.status.code).toBe(SpanStatusCode.UNSET);
    // The W3C header went through the entry's headers, written by the global propagator.
    expect(handled[0]?.headers.traceparent).toBe(`00-${traceId}-${send.spanContext().spanId}-01`);
  });

  it('request/reply is one trace: send, process, and the reply written from inside the process span', async () => {
    await trace.getTracer('test').startActiveSpan('GET /sum', async (http) => {
      expect(await lastValueFrom(client.send('traced-sum', [1, 2, 3]))).toBe(6);
      http.end();
    });
    await waitFor(() => named('send (temporary)').length === 1, 'the reply span');
    const http = one('GET /sum');
    const request = one('send traced-sum');
    const processSpan = one('process traced-sum');
    // The reply stream is the client's own (a UUID): a template in the span name, the key in an attribute.
    const reply = one('send (temporary)');
    const traceId = http.spanContext().traceId;
    for (const span of [request, processSpan, reply]) expect(span.spanContext().traceId).toBe(traceId);
    expect(processSpan.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(reply.parentSpanContext?.spanId).toBe(processSpan.spanContext().spanId);
    expect(reply.kind).toBe(SpanKind.PRODUCER);
    expect(request.attributes['messaging.message.conversation_id']).toBe(reply.attributes['messaging.message.conversation_id']);
    expect(reply.attributes).toMatchObject({
      'messaging.operation.type': 'send',
      'messaging.destination.name': client.replyStream,
      'messaging.destination.temporary': true,
      'messaging.destination.template': '(temporary)',
    });
  });

  it('span names carry no id: 20 sends and 20 emits give the same few names', async () => {
    for (let i = 0; i < 20; i += 1) {
      expect(await lastValueFrom(client.send('traced-sum', [i, 1]))).toBe(i + 1);
      await lastValueFrom(client.emit('traced-orders', { i }));
    }
    const producers = (): ReadableSpan[] => spans().filter((span) => span.kind === SpanKind.PRODUCER);
    // 20 requests, their 20 replies, 20 events.
    await waitFor(() => producers().length === 60 && named('process traced-orders').length === 20, 'every producer and process span');
    const names = new Set(spans().map((span) => span.name));
    expect([...names].sort()).toEqual(['process traced-orders', 'process traced-sum', 'send (temporary)', 'send traced-orders', 'send traced-sum', 'user work']);
    // The ids stay on the spans, as attributes.
    const conversations = new Set(named('send (temporary)').map((span) => span.attributes['messaging.message.conversation_id']));
    expect(conversations.size).toBe(20);
  });

  it('a streamed reply: one request span, one process span, and one reply span per value, each ended inside it', async () => {
    expect(await lastValueFrom(client.send<number>('traced-stream', [1, 2, 3]).pipe(toArray()))).toEqual([1, 2, 3]);
    await waitFor(() => named('process traced-stream').length === 1, 'the process span');
    const request = one('send traced-stream');
    const processSpan = one('process traced-stream');
    // Reply spans are named for a temporary destination; this request's are told apart by its conversation id.
    const replies = named('send (temporary)').filter(
      (span) => span.attributes['messaging.message.conversation_id'] === request.attributes['messaging.message.conversation_id'],
    );
    expect(replies).toHaveLength(3);
    for (const reply of replies) expect(reply.attributes['messaging.destination.name']).toBe(client.replyStream);
    // Finished spans are exported in the order they ended (a span's end time is only as exact as its start's ms).
    const endOrder = (span: ReadableSpan) => spans().indexOf(span);
    for (const reply of replies) {
      expect(reply.parentSpanContext?.spanId).toBe(processSpan.spanContext().spanId);
      expect(reply.attributes['messaging.message.conversation_id']).toBe(request.attributes['messaging.message.conversation_id']);
      expect(endOrder(reply)).toBeLessThan(endOrder(processSpan));
    }
    expect(processSpan.attributes['messaging.redis_streams.outcome']).toBe('success');
  });

  it("a poison entry: failed process spans (deliveries 1 and 2) and its dead letter on the entry's own trace", async () => {
    const entryId = await lastValueFrom(client.emit('traced-poison', { n: 1 }));
    await waitFor(() => named('dead_letter').length === 1, 'the dead-letter span', { timeout: 15_000 });
    const send = one('send traced-poison');
    const traceId = send.spanContext().traceId;
    const processed = named('process traced-poison');
    expect(processed.map((span) => span.attributes['messaging.redis_streams.message.delivery_count'])).toEqual([1, 2]);
    for (const span of processed) {
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'poison' });
      // The handler's own error (caught before Nest's RPC exception filter turns it into `{ status, message }`).
      expect(span.attributes).toMatchObject({ 'messaging.redis_streams.outcome': 'failure', 'error.type': 'RpcException' });
      expect(span.events.map((event) => event.name)).toEqual(['exception']);
    }
    // A constant name (the settle operation `dead_letter`); the stream is an attribute.
    const dead = one('dead_letter');
    expect(dead.attributes).toMatchObject({
      'messaging.operation.type': 'settle',
      'messaging.operation.name': 'dead_letter',
      'messaging.destination.name': 'traced-poison',
      'messaging.consumer.group.name': 'traced',
    });
    expect(dead.spanContext().traceId).toBe(traceId);
    expect(dead.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
    expect(dead.events.map((event) => [event.name, event.attributes])).toEqual([
      [
        'dead_letter',
        expect.objectContaining({
          'messaging.message.id': entryId,
          'messaging.redis_streams.reason': 'max_deliveries',
          'messaging.redis_streams.message.delivery_count': 2,
          'messaging.redis_streams.dead_letter.stream': '{traced-poison}:dead',
          'error.message': 'RpcException: poison',
        }),
      ],
    ]);
    expect(await pendingCount(redis.client, 'traced-poison', 'traced')).toBe(0);
  });

  it('an entry written by a foreign producer (no headers) starts a new trace', async () => {
    const id = await redis.client.xadd('traced-raw', '*', 'item', 'kettle');
    await waitFor(() => named('process traced-raw').length === 1, 'the process span of the raw entry');
    const processSpan = one('process traced-raw');
    expect(processSpan.parentSpanContext).toBeUndefined();
    expect(processSpan.attributes['messaging.message.id']).toBe(id);
    // Nor does it inherit whatever context the reader happened to run in.
    await xaddEvent(redis.client, 'traced-orders', 'traced-orders', { item: 'mug' });
    await waitFor(() => named('process traced-orders').length === 1, 'the process span of a headerless JSON entry');
    expect(one('process traced-orders').parentSpanContext).toBeUndefined();
    expect(one('process traced-orders').spanContext().traceId).not.toBe(processSpan.spanContext().traceId);
  });

  it('telemetry: false on server and client: no span, no trace header', async () => {
    const quiet = new RedisStreamsClient({ connection: redis.server.url, telemetry: false });
    const server = await startServer(
      { connection: redis.server.url, group: 'untraced', consumer: 'untraced-1', startId: '$', blockMs: 200, telemetry: { tracing: false } },
      [TracedController],
    );
    try {
      exporter.reset();
      await lastValueFrom(quiet.emit('traced-orders', { item: 'teapot' }));
      // Both groups handle it: "traced" (telemetry on, so one process span) and "untraced" (none).
      await waitFor(() => handled.length === 2, 'both groups handled the entry');
      expect(handled.map((entry) => entry.headers)).toEqual([{}, {}]);
      expect(spans().map((span) => span.name).sort()).toEqual(['process traced-orders', 'user work', 'user work']);
    } finally {
      await quiet.close();
      await server.app.close();
    }
  });

  it('a worker process killed (SIGKILL) mid-handler, then recovery elsewhere: a process span with delivery count 2 on the same trace', async () => {
    // The worker (test/fixtures/recovery-worker.ts, no OpenTelemetry SDK) dies on the entry's first delivery.
    const fleet = new WorkerFleet({ url: redis.server.url, stream: 'traced-crash', group: 'crashers', ledger: 'traced-crash-ledger', recovery: false });
    try {
      const worker = await fleet.spawn();
      await trace.getTracer('test').startActiveSpan('POST /crash', async (http) => {
        await lastValueFrom(client.emit('traced-crash', { n: 1, kind: 'crash' }));
        http.end();
      });
      await worker.exited;
    } finally {
      await fleet.stop();
    }
    const recovering = await startServer(
      { connection: redis.server.url, group: 'crashers', consumer: 'rescuer', blockMs: 200, recovery: { interval: 100, minIdleTime: 300 } },
      [CrashRecoveryController],
    );
    try {
      await waitFor(() => named('process traced-crash').length === 1, 'the recovered process span', { timeout: 15_000 });
    } finally {
      await recovering.app.close();
    }
    expect(recoveredDeliveries).toEqual([2]);
    const send = one('send traced-crash');
    const processSpan = one('process traced-crash');
    expect(processSpan.spanContext().traceId).toBe(one('POST /crash').spanContext().traceId);
    expect(processSpan.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
    expect(processSpan.attributes).toMatchObject({
      'messaging.redis_streams.message.delivery_count': 2,
      'messaging.client.id': 'rescuer',
      'messaging.redis_streams.outcome': 'success',
    });
    expect(await pendingCount(redis.client, 'traced-crash', 'crashers')).toBe(0);
  });
});
