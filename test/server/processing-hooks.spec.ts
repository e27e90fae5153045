import { AsyncLocalStorage } from 'node:async_hooks';
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload, type Transport } from '@nestjs/microservices';
import { lastValueFrom, Subject, tap, toArray, type Observable } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsBatchContext } from '../../src/server/batch/batch-context.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { REDIS_STREAMS_TRANSPORT } from '../../src/server/redis-streams.server.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** What a tracing library keeps per message: the start hook runs `done` inside it. */
const span = new AsyncLocalStorage<string>();
/** Start, handler and end steps in the order they happened, each with the entry's key. */
const log: string[] = [];
const starts: Array<{ transportId: Transport | symbol; context: unknown }> = [];
let gate: Subject<number> | undefined;

function keyOf(context: unknown): string {
  if (context instanceof RedisStreamsContext) return context.getId();
  if (context instanceof RedisStreamsBatchContext) return `batch:${context.entries.map((entry) => entry.id).join(',')}`;
  return 'unknown context';
}

/** The handler ran inside the start hook's `done` (its span is the current one). */
function handled(step: string, ctx: RedisStreamsContext): void {
  log.push(`${step}:${ctx.getId()}:${span.getStore() ?? 'no span'}`);
}

@Controller()
class HookedController {
  @EventPattern<string>('hooked.event')
  async onEvent(@Ctx() ctx: RedisStreamsContext): Promise<void> {
    handled('handler', ctx);
    await new Promise((resolve) => setImmediate(resolve));
    handled('settled', ctx);
  }

  @EventPattern<string>('hooked.event-fails', { recovery: false })
  onEventFails(@Ctx() ctx: RedisStreamsContext): never {
    handled('handler', ctx);
    throw new Error('event handler failed');
  }

  @MessagePattern('hooked.sum')
  sum(@Payload() data: number[], @Ctx() ctx: RedisStreamsContext): number {
    handled('handler', ctx);
    return data.reduce((a, b) => a + b, 0);
  }

  @MessagePattern('hooked.throws')
  throws(@Ctx() ctx: RedisStreamsContext): never {
    handled('handler', ctx);
    throw new Error('request handler failed');
  }

  @MessagePattern('hooked.stream')
  stream(@Ctx() ctx: RedisStreamsContext): Observable<number> {
    handled('handler', ctx);
    gate = new Subject<number>();
    return gate;
  }

  @EventPattern<string>('hooked.start-fails', { recovery: false })
  startFails(@Ctx() ctx: RedisStreamsContext): void {
    handled('handler', ctx);
  }

  @EventPattern<string>('hooked.batch', { batch: { size: 3, waitMs: 200 } })
  onBatch(@Payload() _payloads: unknown[], @Ctx() ctx: RedisStreamsBatchContext): void {
    log.push(`handler:${keyOf(ctx)}:${span.getStore() ?? 'no span'}`);
  }
}

describe("Nest's processing hooks (setOnProcessingStartHook / setOnProcessingEndHook) around every handled entry", () => {
  const redis = useRedisServer();
  let running: RunningServer;
  let client: RedisStreamsClient;
  const errors: Error[] = [];

  /** The steps of one entry (entry ids have no colon). */
  const stepsOf = (id: string) => log.filter((line) => line.split(':')[1] === id);
  const idOf = (pattern: string) => keyOf(starts.find((start) => (start.context as RedisStreamsContext).getPattern?.() === pattern)?.context);

  beforeAll(async () => {
    running = await startServer({ connection: redis.server.url, group: 'hooked', blockMs: 200, shutdownTimeout: 200 }, [HookedController], [], (server) => {
      server.setOnProcessingStartHook((transportId, context, done) => {
        starts.push({ transportId, context });
        const key = keyOf(context);
        log.push(`start:${key}`);
        if (context instanceof RedisStreamsContext && context.getPattern() === 'hooked.start-fails') throw new Error('the tracer broke');
        void span.run(`span-${key}`, done);
      });
      server.setOnProcessingEndHook((_transportId, context) => log.push(`end:${keyOf(context)}`));
      server.on('error', (error: Error) => errors.push(error));
    });
    client = new RedisStreamsClient({ connection: redis.server.url });
  });
  afterAll(async () => {
    await client?.close();
    await running?.app.close();
  });

  it('an event: start with its RedisStreamsContext and transportId, the handler inside done(), end once after it settled', async () => {
    await lastValueFrom(client.emit('hooked.event', { n: 1 }));
    await waitFor(() => log.some((line) => line.startsWith('end:')), 'the end hook');
    const id = idOf('hooked.event');
    expect(starts[0]?.transportId).toBe(REDIS_STREAMS_TRANSPORT);
    expect(starts[0]?.context).toBeInstanceOf(RedisStreamsContext);
    expect(stepsOf(id)).toEqual([`start:${id}`, `handler:${id}:span-${id}`, `settled:${id}:span-${id}`, `end:${id}`]);
  });

  it('a failing event handler: the end hook once, after it threw', async () => {
    await lastValueFrom(client.emit('hooked.event-fails', {}));
    await waitFor(() => idOf('hooked.event-fails') !== 'unknown context' && log.includes(`end:${idOf('hooked.event-fails')}`), 'the end hook');
    const id = idOf('hooked.event-fails');
    expect(stepsOf(id)).toEqual([`start:${id}`, `handler:${id}:span-${id}`, `end:${id}`]);
  });

  it('requests (answered, throwing): start, handler, end once; the caller gets its reply or error', async () => {
    expect(await lastValueFrom(client.send('hooked.sum', [1, 2, 3]))).toBe(6);
    await expect(lastValueFrom(client.send('hooked.throws', {}))).rejects.toEqual({ status: 'error', message: 'Internal server error' });
    for (const pattern of ['hooked.sum', 'hooked.throws']) {
      const id = idOf(pattern);
      await waitFor(() => log.includes(`end:${id}`), `the end hook of ${pattern}`);
      expect(stepsOf(id)).toEqual([`start:${id}`, `handler:${id}:span-${id}`, `end:${id}`]);
    }
  });

  it('a streamed reply: the end hook waits for the Observable to complete, then runs once', async () => {
    gate = undefined;
    const seen: number[] = [];
    const call = lastValueFrom(client.send<number>('hooked.stream', {}).pipe(tap((n) => seen.push(n)), toArray()));
    call.catch(() => undefined); // awaited below
    await waitFor(() => gate !== undefined, 'the handler to run');
    const values = gate as unknown as Subject<number>;
    values.next(1);
    await waitFor(() => seen.length === 1, 'the first value');
    const id = idOf('hooked.stream');
    expect(stepsOf(id)).toEqual([`start:${id}`, `handler:${id}:span-${id}`]);
    values.next(2);
    values.complete();
    expect(await call).toEqual([1, 2]);
    await waitFor(() => log.includes(`end:${id}`), 'the end hook');
    expect(stepsOf(id)).toEqual([`start:${id}`, `handler:${id}:span-${id}`, `end:${id}`]);
  });

  it('a start hook that throws before done(): error event, the handler never runs, the end hook once, the entry stays pending', async () => {
    await lastValueFrom(client.emit('hooked.start-fails', {}));
    await waitFor(() => errors.some((error) => /processing start hook failed: the tracer broke/.test(error.message)), 'the error event');
    const id = idOf('hooked.start-fails');
    expect(stepsOf(id)).toEqual([`start:${id}`, `end:${id}`]);
    expect(await pendingCount(redis.client, 'hooked.start-fails', 'hooked')).toBe(1);
  });

  it('a batch handler: the hooks run once per batch, with its RedisStreamsBatchContext', async () => {
    for (let n = 0; n < 3; n += 1) await lastValueFrom(client.emit('hooked.batch', { n }));
    const batchSize = () =>
      starts.filter((start) => start.context instanceof RedisStreamsBatchContext).reduce((sum, start) => sum + (start.context as RedisStreamsBatchContext).entries.length, 0);
    await waitFor(() => batchSize() === 3, 'every entry in a batch');
    const batches = starts.filter((start) => start.context instanceof RedisStreamsBatchContext).map((start) => keyOf(start.context));
    for (const key of batches) {
      await waitFor(() => log.includes(`end:${key}`), 'the end hook of the batch');
      expect(log.filter((line) => line.includes(key))).toEqual([`start:${key}`, `handler:${key}:span-${key}`, `end:${key}`]);
    }
  });

  it('every start has exactly one end', () => {
    const started = log.filter((line) => line.startsWith('start:')).map((line) => line.slice('start:'.length));
    const ended = log.filter((line) => line.startsWith('end:')).map((line) => line.slice('end:'.length));
    expect([...ended].sort()).toEqual([...started].sort());
  });
});
