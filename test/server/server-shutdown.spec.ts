import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom, Observable, take, type Subscriber } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Test } from '@nestjs/testing';
import { RedisStreamsContext } from '../../src/server/context.js';
import type { RedisClient } from '../../src/redis/connection.js';
import { RedisStreamsServer, type RedisStreamsConnections } from '../../src/server/redis-streams.server.js';
import { startServer } from '../fixtures/server-app.js';
import { ourClients, pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { RedisServerProcess } from '../helpers/redis-server.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const gate = {
  open: undefined as (() => void) | undefined,
  opened: undefined as Promise<void> | undefined,
  started: [] as string[],
  finished: [] as string[],
};
function closeGate(): void {
  gate.opened = new Promise((resolve) => (gate.open = resolve));
}

@Controller()
class SlowController {
  @EventPattern<string>('slow')
  async onSlow(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    gate.started.push(ctx.getId());
    await gate.opened;
    gate.finished.push(ctx.getId());
  }
}

const after = { seen: [] as unknown[] };

@Controller()
class AfterRestartController {
  @EventPattern<string>('after-restart')
  onEvent(@Payload() data: unknown): void {
    after.seen.push(data);
  }
}

describe('RedisStreamsServer: shutdown and Redis restarts', () => {
  let redis: RedisServerProcess;
  let client: Redis;

  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    client = redis.client();
    // This spec kills Redis on purpose; the helper client just reconnects.
    client.on('error', () => undefined);
  });
  afterAll(async () => {
    client.disconnect();
    await redis.stop();
  });

  it('close() under load: running handlers finish and ack, buffered entries are handed back at once with unchanged counts', async () => {
    closeGate();
    const { app } = await startServer({ connection: redis.url, group: 'g', consumer: 'leaving', concurrency: 2, prefetch: 10 }, [SlowController]);
    const ids: string[] = [];
    for (let n = 0; n < 10; n++) ids.push((await xaddEvent(client, 'slow', 'slow', { n })) as string);
    await waitFor(async () => gate.started.length === 2 && (await pendingRows(client, 'slow', 'g', 'leaving')).length === 10, '2 running, 10 fetched');

    const closing = app.close();
    closing.catch(() => undefined);
    try {
      // While the two handlers still run, the 8 unstarted entries already belong to the handoff consumer.
      await waitFor(async () => (await pendingRows(client, 'slow', 'g', 'handoff')).length === 8, 'handoff of the 8 buffered entries');
      const handedOff = await pendingRows(client, 'slow', 'g', 'handoff');
      expect(handedOff.map((row) => row.id)).toEqual(ids.filter((id) => !gate.started.includes(id)));
      expect(handedOff.every((row) => row.deliveries === 1)).toBe(true);
      // A min-idle of a minute: only the handed-back entries qualify, not the two still running.
      const claimed = (await client.call('XAUTOCLAIM', 'slow', 'g', 'other', 60_000, '0-0', 'COUNT', 100)) as [string, Array<[string, string[]]>];
      expect(claimed[1].map(([id]) => id)).toEqual(handedOff.map((row) => row.id));
      expect(gate.finished).toEqual([]);
    } finally {
      gate.open?.();
      await closing;
    }
    expect(gate.finished.sort()).toEqual([...gate.started].sort());
    expect(await pendingRows(client, 'slow', 'g', 'leaving')).toEqual([]);
    expect((await pendingRows(client, 'slow', 'g')).map((row) => row.consumer)).toEqual(Array(8).fill('other'));
    expect(await ourClients(client)).toEqual([]);
  });

  it('Redis restarted without persistence: status goes down and back, the group is recreated, new entries flow', async () => {
    const { app, server } = await startServer(
      { connection: redis.url, group: 'g', consumer: 'survivor', reconnectDelay: { initialMs: 20, maxMs: 200 } },
      [AfterRestartController],
    );
    try {
      const statuses: string[] = [];
      const recreated: Array<{ stream: string; group: string }> = [];
      server.status.subscribe((status) => statuses.push(status));
      server.on('groupRecreated', (info) => recreated.push(info));
      await waitFor(() => statuses.at(-1) === 'connected', 'connected');
      await xaddEvent(client, 'after-restart', 'after-restart', { n: 'before' });
      await waitFor(() => after.seen.length === 1, 'entry before restart');

      await redis.restart();
      await waitFor(() => recreated.length > 0, 'group recreated', { timeout: 15_000 });
      expect(recreated[0]).toEqual({ stream: 'after-restart', group: 'g' });
      expect(statuses.some((status) => status === 'disconnected' || status === 'reconnecting')).toBe(true);
      await waitFor(() => statuses.at(-1) === 'connected', 'connected again', { timeout: 15_000 });

      await xaddEvent(client, 'after-restart', 'after-restart', { n: 'after' });
      await waitFor(() => after.seen.length === 2, 'entry written after the restart');
      expect(after.seen).toEqual([{ n: 'before' }, { n: 'after' }]);
      await waitFor(async () => (await pendingRows(client, 'after-restart', 'g')).length === 0, 'acked');
    } finally {
      await app.close();
    }
    expect(await ourClients(client)).toEqual([]);
  });

  it('close() with Redis down still ends and leaves nothing behind', async () => {
    const { app, server } = await startServer({ connection: redis.url, group: 'g', consumer: 'orphan' }, [AfterRestartController]);
    const statuses: string[] = [];
    server.status.subscribe((status) => statuses.push(status));
    await waitFor(() => statuses.at(-1) === 'connected', 'connected');
    const { commands, readers } = server.unwrap<RedisStreamsConnections>();
    await redis.kill();
    try {
      await app.close();
      expect(statuses.at(-1)).toBe('disconnected');
      // ioredis leaves `status` at 'reconnecting' when disconnect() cancels a pending reconnect;
      // what matters is that no reconnect is scheduled (no socket, no timer left behind).
      const shutDown = (connection: RedisClient) =>
        connection.status === 'end' ||
        (connection.status === 'reconnecting' && (connection as unknown as { reconnectTimeout: unknown }).reconnectTimeout == null);
      await waitFor(() => [commands, ...readers].every(shutDown), 'every connection shut down');
    } finally {
      await redis.restart();
    }
  });

  it('close() while listen() waits for Redis: listen fails and nothing starts reading afterwards', async () => {
    // A connection of the user's: the server neither connects nor closes it, so Redis can be
    // paused after it is up and the group creation waits on Redis, not on the connection.
    const shared = redis.client();
    await shared.ping();
    const moduleRef = await Test.createTestingModule({ controllers: [AfterRestartController] }).compile();
    const server = new RedisStreamsServer({ connection: shared, group: 'g-race', consumer: 'race' });
    const app = moduleRef.createNestMicroservice({ strategy: server, logger: false });
    await app.init();
    redis.pause();
    try {
      const listened = new Promise<unknown>((resolve) => void server.listen((error?: unknown) => resolve(error ?? 'listening')));
      await server.close();
      redis.resume();
      // The group creation is answered after close(): the server must not start its readers now.
      expect(String(await listened)).toMatch(/closed while it started listening/);
      const { readers } = server.unwrap<RedisStreamsConnections>();
      expect(readers.map((reader) => reader.status)).toEqual(['end']);
    } finally {
      redis.resume();
      await app.close();
      shared.disconnect();
    }
  });

  it('close() while Redis is paused (a blocked read never answered) ends within one QUIT timeout and leaves nothing behind', async () => {
    const { app, server } = await startServer({ connection: redis.url, group: 'g-paused', consumer: 'paused' }, [AfterRestartController]);
    const { commands, readers } = server.unwrap<RedisStreamsConnections>();
    // The reader is blocked in XREADGROUP (and the delayed wake-up subscribed); Redis then stops answering anything.
    await waitFor(async () => String(await client.client('LIST')).includes('nestjs-redis-streams:server-reader'), 'reader connected');
    redis.pause();
    // A recovery tick in progress, its first command unanswered: close() waited for it for good.
    const tick = new RedisStreamsRecovery().runOnce({ consumer: 'paused' }).catch(() => undefined);
    try {
      const started = performance.now();
      await app.close();
      // One wait of ~2 s (the blocked read's grace) for the reader stop, the tick and every QUIT
      // together; it took 6 s when each QUIT waited its own 2 s (and for good with a tick in progress).
      expect(performance.now() - started).toBeLessThan(4_000);
      // Closed for good: ended, or a cancelled reconnect with no timer left (see the test above).
      const shutDown = (connection: RedisClient) =>
        connection.status === 'end' ||
        (connection.status === 'reconnecting' && (connection as unknown as { reconnectTimeout: unknown }).reconnectTimeout == null);
      await waitFor(() => [commands, ...readers].every(shutDown), 'every connection shut down');
    } finally {
      redis.resume();
    }
    await tick;
    // Redis, answering again, holds none of the server's connections (the delayed wake-up's included).
    await waitFor(async () => (await ourClients(client)).length === 0, 'no server connection left in Redis');
  }, 30_000);
});

/** The subscriber of the running `endless` handler's Observable (the test emits through it), and its teardowns. */
const endless = { subscriber: undefined as Subscriber<number> | undefined, tornDown: 0 };

@Controller()
class EndlessController {
  @MessagePattern('endless')
  endless(): Observable<number> {
    return new Observable<number>((subscriber) => {
      endless.subscriber = subscriber;
      subscriber.next(1);
      return () => {
        endless.tornDown += 1;
      };
    });
  }
}

describe('RedisStreamsServer: close() and a streamed reply that never completes', () => {
  const redis = useRedisServer();

  it('after shutdownTimeout the Observable is unsubscribed, no reply is written after close, the request stays pending', async () => {
    const { app, server } = await startServer({ connection: redis.server.url, group: 'endless', consumer: 'endless-1', blockMs: 200, shutdownTimeout: 100 }, [
      EndlessController,
    ]);
    const errors: Error[] = [];
    server.on('error', (error: Error) => errors.push(error));
    const client = new RedisStreamsClient({ connection: redis.server.url, timeout: 10_000 });
    try {
      expect(await lastValueFrom(client.send<number>('endless', {}).pipe(take(1)))).toBe(1);
      await app.close();
      // close() gave up on the handler at shutdownTimeout: its Observable was torn down then.
      expect(endless.tornDown).toBe(1);
      // A value now goes nowhere: no reply write, so no "reply failed" error either.
      endless.subscriber?.next(2);
      await sleep(200);
      expect(errors.map((error) => error.message)).toEqual([]);
      // Unanswered to the end: the request waits in the group for recovery.
      expect((await pendingRows(redis.client, 'endless', 'endless')).map((row) => row.consumer)).toEqual(['endless-1']);
    } finally {
      await client.close();
    }
  });
});

/** Teardowns of the never-completing Observables the event handlers below return. */
const endlessEvents = { started: 0, tornDown: 0, batchStarted: 0, batchTornDown: 0 };

@Controller()
class EndlessEventController {
  @EventPattern<string>('endless-event')
  onEvent(): Observable<never> {
    return new Observable<never>(() => {
      endlessEvents.started += 1;
      return () => {
        endlessEvents.tornDown += 1;
      };
    });
  }

  @EventPattern<string>('endless-batch', { batch: { size: 2, waitMs: 50 } })
  onBatch(): Observable<never> {
    return new Observable<never>(() => {
      endlessEvents.batchStarted += 1;
      return () => {
        endlessEvents.batchTornDown += 1;
      };
    });
  }
}

describe('RedisStreamsServer: close() and an event handler whose Observable never completes', () => {
  const redis = useRedisServer();

  it('after shutdownTimeout the Observables (single entry and batch) are unsubscribed and their entries stay pending', async () => {
    const { app } = await startServer({ connection: redis.server.url, group: 'endless', consumer: 'endless-2', blockMs: 200, shutdownTimeout: 100 }, [
      EndlessEventController,
    ]);
    const single = (await xaddEvent(redis.client, 'endless-event', 'endless-event', {})) as string;
    const batch = [(await xaddEvent(redis.client, 'endless-batch', 'endless-batch', {})) as string, (await xaddEvent(redis.client, 'endless-batch', 'endless-batch', {})) as string];
    await waitFor(() => endlessEvents.started === 1 && endlessEvents.batchStarted === 1, 'both handlers subscribed');
    await app.close();
    // close() gave up on them at shutdownTimeout: torn down then, nothing left running after close.
    expect([endlessEvents.tornDown, endlessEvents.batchTornDown]).toEqual([1, 1]);
    expect((await pendingRows(redis.client, 'endless-event', 'endless')).map((row) => [row.id, row.consumer])).toEqual([[single, 'endless-2']]);
    expect((await pendingRows(redis.client, 'endless-batch', 'endless')).map((row) => [row.id, row.consumer])).toEqual(batch.map((id) => [id, 'endless-2']));
  });
});
