import {
  Catch,
  Controller,
  Injectable,
  Module,
  UseFilters,
  UseGuards,
  UsePipes,
  type ArgumentsHost,
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  type NestInterceptor,
  type PipeTransform,
  type RpcExceptionFilter,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { concat, from, lastValueFrom, map, Observable, of, range, scan, Subject, take, tap, throwError, toArray, concatMap, delay, EMPTY } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/**
 * What Nest's own transports do (its `integration/microservices` specs and docs), checked on
 * RedisStreamsServer / RedisStreamsClient with only the wiring changed.
 */

/** The Subject a `gated` request's handler returns: the test drives its values and completion. */
let gate: Subject<number> | undefined;
const events: Array<{ handler: string; data: unknown }> = [];

class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

class DoublePipe implements PipeTransform<number[], number[]> {
  transform(value: number[]): number[] {
    return value.map((n) => n * 2);
  }
}

@Catch()
class RecoverFilter implements RpcExceptionFilter {
  catch(): Observable<unknown> {
    return of({ recovered: true });
  }
}

@Controller()
class ConformanceController {
  // ---- streamed replies (Nest's "streaming" spec) ----

  @MessagePattern({ cmd: 'streaming' })
  streaming(@Payload() data: number[]): Observable<number> {
    return from(data);
  }

  /** Each value in a tick of its own: every one is a non-final reply, then a final one. */
  @MessagePattern('streaming.spaced')
  spaced(@Payload() data: number[]): Observable<number> {
    return from(data).pipe(concatMap((n) => of(n).pipe(delay(2))));
  }

  @MessagePattern('streaming.fails-halfway')
  failsHalfway(): Observable<number> {
    return concat(of(1, 2), throwError(() => new RpcException({ code: 'HALFWAY' })));
  }

  @MessagePattern('streaming.never-completes')
  neverCompletes(): Observable<number> {
    return new Observable<number>((subscriber) => {
      subscriber.next(1);
      subscriber.next(2);
    });
  }

  @MessagePattern('streaming.gated')
  gated(): Observable<number> {
    gate = new Subject<number>();
    return gate;
  }

  @MessagePattern('streaming.empty')
  empty(): Observable<number> {
    return EMPTY;
  }

  @MessagePattern('streaming.many')
  many(@Payload() count: number): Observable<number> {
    return range(1, count);
  }

  // ---- context ----

  @MessagePattern('metadata')
  metadata(@Ctx() ctx: RedisStreamsContext) {
    const metadata = ctx.getMetadata();
    return { isUndefined: metadata === undefined, metadata: metadata ?? null, headers: ctx.getHeaders() };
  }

  // ---- Nest's generic expectations ----

  @MessagePattern({ cmd: 'sum' })
  sum(@Payload() data: number[]): number {
    return data.reduce((a, b) => a + b, 0);
  }

  @MessagePattern({ cmd: 'asyncSum' })
  async asyncSum(@Payload() data: number[]): Promise<number> {
    await new Promise((resolve) => setImmediate(resolve));
    return data.reduce((a, b) => a + b, 0);
  }

  @MessagePattern('rpc-exception.object')
  rpcObject(): never {
    throw new RpcException({ code: 'OUT_OF_STOCK', item: 'kettle' });
  }

  @MessagePattern('rpc-exception.string')
  rpcString(): never {
    throw new RpcException('out of stock');
  }

  @UseGuards(DenyGuard)
  @MessagePattern('guarded')
  guarded(): string {
    return 'never reached';
  }

  @UsePipes(DoublePipe)
  @MessagePattern('piped')
  piped(@Payload() data: number[]): number[] {
    return data;
  }

  @MessagePattern('payload-prop')
  payloadProp(@Payload('numbers') numbers: number[]): number {
    return numbers.length;
  }

  @UseFilters(RecoverFilter)
  @MessagePattern('recovered')
  recovered(): never {
    throw new Error('the filter turns this into a reply');
  }

  @MessagePattern('echo')
  echo(@Payload() data: unknown): unknown {
    return data;
  }

  @MessagePattern('dates-and-buffers')
  datesAndBuffers(): { at: Date; bytes: Buffer } {
    return { at: new Date(Date.UTC(2024, 0, 2, 3, 4, 5)), bytes: Buffer.from([0, 1, 255]) };
  }

  @EventPattern<string>('notification')
  first(@Payload() data: unknown): void {
    events.push({ handler: 'first', data });
  }

  @EventPattern<string>('notification')
  second(@Payload() data: unknown): void {
    events.push({ handler: 'second', data });
  }
}

describe('Nest conformance: RedisStreamsServer + RedisStreamsClient', () => {
  const redis = useRedisServer();
  let running: RunningServer;
  let client: RedisStreamsClient;

  beforeAll(async () => {
    running = await startServer({ connection: redis.server.url, group: 'conformance', blockMs: 200, shutdownTimeout: 200 }, [ConformanceController]);
    client = new RedisStreamsClient({ connection: redis.server.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.close();
    await running.app.close();
  });

  describe('streamed replies: an Observable sends every value', () => {
    it('a handler emitting 1..5: the caller gets each value in order, and scan sums them to 15', async () => {
      expect(await lastValueFrom(client.send<number>({ cmd: 'streaming' }, [1, 2, 3, 4, 5]).pipe(toArray()))).toEqual([1, 2, 3, 4, 5]);
      expect(await lastValueFrom(client.send<number>({ cmd: 'streaming' }, [1, 2, 3, 4, 5]).pipe(scan((a, b) => a + b)))).toBe(15);
    });

    it('values emitted over time arrive one by one, in order, and the call completes after the last', async () => {
      expect(await lastValueFrom(client.send<number>('streaming.spaced', [5, 4, 3, 2, 1]).pipe(toArray()))).toEqual([5, 4, 3, 2, 1]);
    });

    it('an error after values: the caller gets the values, then the error', async () => {
      const seen: number[] = [];
      await expect(lastValueFrom(client.send<number>('streaming.fails-halfway', {}).pipe(tap((n) => seen.push(n))))).rejects.toEqual({ code: 'HALFWAY' });
      expect(seen).toEqual([1, 2]);
    });

    it('an Observable that completes without a value completes the call without one', async () => {
      expect(await lastValueFrom(client.send<number>('streaming.empty', {}).pipe(toArray()))).toEqual([]);
    });

    it('a long stream (2000 values) arrives whole and in order', async () => {
      const values = await lastValueFrom(client.send<number>('streaming.many', 2000).pipe(toArray()));
      expect(values).toHaveLength(2000);
      expect(values.every((n, i) => n === i + 1)).toBe(true);
    });

    it('each value reaches the caller at once; the request is acked only after the Observable completed', async () => {
      gate = undefined;
      const seen: number[] = [];
      const done = lastValueFrom(client.send<number>('streaming.gated', {}).pipe(tap((n) => seen.push(n)), toArray()));
      done.catch(() => undefined); // awaited below; a failed wait must not leave it unhandled
      await waitFor(() => gate !== undefined, 'the handler to run');
      const values = gate as unknown as Subject<number>;
      values.next(1);
      await waitFor(() => seen.length === 1, 'the first value');
      values.next(2);
      await waitFor(() => seen.length === 2, 'the second value');
      // Still running: the request stays pending in the group until the stream completes.
      expect(await pendingCount(redis.client, 'streaming.gated', 'conformance')).toBe(1);
      values.complete();
      expect(await done).toEqual([1, 2]);
      await waitFor(async () => (await pendingCount(redis.client, 'streaming.gated', 'conformance')) === 0, 'the request acked');
    });

    it('an Observable that emits and never completes: its values arrive long before the timeout, then the caller times out', async () => {
      const timeout = 20_000;
      const firstTwo = await lastValueFrom(client.send<number>('streaming.never-completes', new RedisStreamsRecord({}, { timeout })).pipe(take(2), toArray()));
      expect(firstTwo).toEqual([1, 2]);
      // Unsubscribing (take) dropped the call; the request stays pending while its handler runs.
      expect(await pendingCount(redis.client, 'streaming.never-completes', 'conformance')).toBe(1);

      const seen: number[] = [];
      const call = lastValueFrom(client.send<number>('streaming.never-completes', new RedisStreamsRecord({}, { timeout: 3_000 })).pipe(tap((n) => seen.push(n))));
      await expect(call).rejects.toMatchObject({ name: 'RedisStreamsTimeoutError' });
      expect(seen).toEqual([1, 2]);
    });
  });

  describe('RedisStreamsContext.getMetadata() as Nest', () => {
    it('is undefined when the request carried no metadata (getHeaders() stays {})', async () => {
      expect(await lastValueFrom(client.send('metadata', {}))).toEqual({ isUndefined: true, metadata: null, headers: {} });
    });

    it('is the metadata sent when there is some: a record\'s headers, Nest\'s dispatch metadata', async () => {
      const reply = await lastValueFrom(client.send('metadata', new RedisStreamsRecord({}, { headers: { tenant: 'acme' } })));
      expect(reply).toEqual({ isUndefined: false, metadata: { tenant: 'acme' }, headers: { tenant: 'acme' } });

      const hooked = new RedisStreamsClient({ connection: redis.server.url });
      const hookable = hooked as unknown as { setOnDispatchHook?: (hook: (packet: { metadata?: Record<string, string> }) => void) => void };
      try {
        if (typeof hookable.setOnDispatchHook !== 'function') return; // Nest 11: no dispatch hook
        hookable.setOnDispatchHook((packet) => {
          packet.metadata = { traceId: 't-1' };
        });
        expect(await lastValueFrom(hooked.send('metadata', {}))).toEqual({ isUndefined: false, metadata: { traceId: 't-1' }, headers: { traceId: 't-1' } });
      } finally {
        await hooked.close();
      }
    });
  });

  describe("Nest's generic expectations", () => {
    it('a sync and a Promise handler answer with their value', async () => {
      expect(await lastValueFrom(client.send({ cmd: 'sum' }, [1, 2, 3]))).toBe(6);
      expect(await lastValueFrom(client.send({ cmd: 'asyncSum' }, [1, 2, 3]))).toBe(6);
    });

    it('an RpcException payload reaches the caller: an object unchanged, a string as { status, message }', async () => {
      await expect(lastValueFrom(client.send('rpc-exception.object', {}))).rejects.toEqual({ code: 'OUT_OF_STOCK', item: 'kettle' });
      await expect(lastValueFrom(client.send('rpc-exception.string', {}))).rejects.toEqual({ status: 'error', message: 'out of stock' });
    });

    it('a guard returning false: the caller gets "Forbidden resource"', async () => {
      await expect(lastValueFrom(client.send('guarded', {}))).rejects.toEqual({ status: 'error', message: 'Forbidden resource' });
    });

    it('@UsePipes transforms the payload; @Payload(prop) picks one property', async () => {
      expect(await lastValueFrom(client.send('piped', [1, 2, 3]))).toEqual([2, 4, 6]);
      expect(await lastValueFrom(client.send('payload-prop', { numbers: [1, 2, 3, 4] }))).toBe(4);
    });

    it('@UseFilters with a filter that recovers: its value is the reply', async () => {
      expect(await lastValueFrom(client.send('recovered', {}))).toEqual({ recovered: true });
    });

    it('Buffers and Dates travel as JSON does them, both ways', async () => {
      const at = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));
      expect(await lastValueFrom(client.send('echo', { at, bytes: Buffer.from('hi') }))).toEqual({
        at: '2024-01-02T03:04:05.000Z',
        bytes: { type: 'Buffer', data: [104, 105] },
      });
      expect(await lastValueFrom(client.send('dates-and-buffers', {}))).toEqual({
        at: '2024-01-02T03:04:05.000Z',
        bytes: { type: 'Buffer', data: [0, 1, 255] },
      });
    });

    it('two @EventPattern handlers of one pattern both run for each event', async () => {
      await lastValueFrom(client.emit('notification', { n: 1 }));
      await waitFor(() => events.length === 2, 'both handlers');
      expect(events.map((e) => e.handler).sort()).toEqual(['first', 'second']);
      expect(events.every((e) => JSON.stringify(e.data) === '{"n":1}')).toBe(true);
    });
  });
});

// ---- Nest's broadcast spec (integration/microservices broadcast-redis): two services answer one request ----

/** Teardowns of the broadcast handlers' Observables: close() must end them (they never complete). */
const broadcast = { unsubscribed: 0 };

@Controller()
class BroadcastController {
  @MessagePattern({ cmd: 'broadcast' })
  replyBroadcast(): Observable<number> {
    // Nest's handler, `new Observable((observer) => observer.next(1))`, plus a teardown that counts.
    return new Observable((observer) => {
      observer.next(1);
      return () => {
        broadcast.unsubscribed += 1;
      };
    });
  }
}

describe("Nest conformance: Nest's broadcast test (two services, never-completing Observables)", () => {
  const redis = useRedisServer();
  const services: RunningServer[] = [];
  let client: RedisStreamsClient;

  beforeAll(async () => {
    // Nest's two services on one Redis channel: here two consumer groups on the same request stream.
    for (const group of ['broadcast-a', 'broadcast-b']) {
      services.push(await startServer({ connection: redis.server.url, group, blockMs: 200, shutdownTimeout: 100 }, [BroadcastController]));
    }
    client = new RedisStreamsClient({ connection: redis.server.url });
  });
  afterAll(async () => {
    await client?.close();
    for (const service of services) await service.app.close();
  });

  it("send('broadcast').pipe(scan(sum), take(2)) is 2; close() then unsubscribes both handlers", async () => {
    const total = client.send<number>({ cmd: 'broadcast' }, {}).pipe(
      scan((a, b) => a + b),
      take(2),
    );
    expect(await lastValueFrom(total)).toBe(2);
    // Never completed: each group's request waits, its handler still subscribed, until close().
    expect(await pendingCount(redis.client, '{"cmd":"broadcast"}', 'broadcast-a')).toBe(1);
    expect(await pendingCount(redis.client, '{"cmd":"broadcast"}', 'broadcast-b')).toBe(1);
    expect(broadcast.unsubscribed).toBe(0);
    for (const service of services.splice(0)) await service.app.close();
    expect(broadcast.unsubscribed).toBe(2);
  });
});

// ---- a hybrid app: connectMicroservice(…, { deferInitialization: true }) with global enhancers ----

class GlobalDenyWhenAsked implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return (context.switchToRpc().getData() as { deny?: boolean }).deny !== true;
  }
}

class WrapInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(map((value: unknown) => ({ wrapped: value })));
  }
}

class TagPipe implements PipeTransform<Record<string, unknown>> {
  transform(value: Record<string, unknown>): Record<string, unknown> {
    return { ...value, piped: true };
  }
}

@Catch(RpcException)
class GlobalRpcFilter implements RpcExceptionFilter<RpcException> {
  catch(exception: RpcException, _host: ArgumentsHost): Observable<never> {
    return throwError(() => ({ filtered: exception.getError() }));
  }
}

@Injectable()
@Controller()
class HybridController {
  @MessagePattern('hybrid.echo')
  echo(@Payload() data: Record<string, unknown>): Record<string, unknown> {
    return data;
  }

  @MessagePattern('hybrid.fail')
  fail(): never {
    throw new RpcException('hybrid failure');
  }
}

@Module({ controllers: [HybridController] })
class HybridModule {}

describe('Nest conformance: connectMicroservice(…, { deferInitialization: true }) with global enhancers', () => {
  const redis = useRedisServer();
  let app: INestApplication;
  let client: RedisStreamsClient;

  beforeAll(async () => {
    app = await NestFactory.create(HybridModule, { logger: false });
    const microservice = app.connectMicroservice(
      { strategy: new RedisStreamsServer({ connection: redis.server.url, group: 'hybrid', blockMs: 200, shutdownTimeout: 200 }) },
      { deferInitialization: true },
    );
    // Registered after connectMicroservice: deferred initialization is what makes them apply.
    microservice.useGlobalGuards(new GlobalDenyWhenAsked());
    microservice.useGlobalInterceptors(new WrapInterceptor());
    microservice.useGlobalPipes(new TagPipe());
    microservice.useGlobalFilters(new GlobalRpcFilter());
    await app.startAllMicroservices();
    await app.init();
    client = new RedisStreamsClient({ connection: redis.server.url });
  });
  afterAll(async () => {
    await client?.close();
    await app?.close();
  });

  it('the global pipe, interceptor, guard and filter of the microservice apply to its handlers', async () => {
    expect(await lastValueFrom(client.send('hybrid.echo', { n: 1 }))).toEqual({ wrapped: { n: 1, piped: true } });
    // The guard's "Forbidden resource" RpcException goes through the global filter too.
    await expect(lastValueFrom(client.send('hybrid.echo', { deny: true }))).rejects.toEqual({ filtered: 'Forbidden resource' });
    await expect(lastValueFrom(client.send('hybrid.fail', {}))).rejects.toEqual({ filtered: 'hybrid failure' });
  });
});
