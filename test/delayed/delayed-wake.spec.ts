import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { delayedKeys } from '../../src/delayed/delayed-keys.js';
import { delayedWakeChannel } from '../../src/delayed/wake-channel.js';
import { redisNow } from '../../src/redis/server-time.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { ourClients } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';
import type { Redis } from 'ioredis';

/**
 * The delayed wake-up (docs/scheduling.md, "Wake-up"): a hold that becomes its stream's earliest
 * is announced on the stream's wake-up channel, and the workers promoting it do not wait for their
 * interval. The workers here promote every 10 s at the latest: an entry handled within 3 s of its
 * due time was woken for.
 */
const INTERVAL = 10_000;
/** Shorter than INTERVAL: without the wake-up, an entry held after the last round cannot arrive in time. */
const WELL_BEFORE_INTERVAL = 3_000;

const handled: { id: string; n: number }[] = [];

@Controller()
class WakeController {
  @EventPattern<string>('wake')
  onWake(@Payload() data: { n: number }, @Ctx() ctx: RedisStreamsContext): void {
    handled.push({ id: ctx.getId(), n: data.n });
  }
}

const idMs = (id: string) => Number(id.split('-')[0]);
const subscribers = async (redis: Redis, stream: string): Promise<number> => {
  const [, count] = (await redis.call('PUBSUB', 'NUMSUB', delayedWakeChannel(stream))) as [string, number];
  return Number(count);
};

function wakeSuite(appendOnly: boolean) {
  const redis = useRedisServer({ appendOnly });
  const running: RunningServer[] = [];
  let client: RedisStreamsClient | undefined;

  afterEach(async () => {
    for (const r of running.splice(0)) await r.app.close();
    await client?.close();
    client = undefined;
    handled.length = 0;
  });

  const startWorker = async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 100, delayed: { interval: INTERVAL } }, [WakeController]));
    await waitFor(async () => (await subscribers(redis.client, 'wake')) === 1, 'the worker subscribed to the wake-up channel');
  };

  /** Emits entry `n` due in `delayMs` and waits for it, well before the interval; resolves with its entry id's ms and the earliest due time it can have. */
  const emitAndAwait = async (n: number, delayMs: number): Promise<{ addedMs: number; dueFromMs: number }> => {
    client ??= new RedisStreamsClient({ connection: redis.server.url });
    const before = await redisNow(redis.client);
    await lastValueFrom(client.emit('wake', new RedisStreamsRecord({ n }, { delay: delayMs })));
    await waitFor(() => handled.some((entry) => entry.n === n), `entry ${n} handled before the interval`, { timeout: WELL_BEFORE_INTERVAL, interval: 5 });
    return { addedMs: idMs(handled.find((entry) => entry.n === n)!.id), dueFromMs: before + delayMs };
  };

  /** A producer of its own from now on (one that lived through a restart may still be waiting to reconnect). */
  const newProducer = async () => {
    await client?.close();
    client = undefined;
  };

  return { redis, running, startWorker, emitAndAwait, newProducer };
}

describe('delayed wake-up: an idle worker promotes a hold when it is due, not at its next interval round', () => {
  const { redis, running, startWorker, emitAndAwait } = wakeSuite(false);

  it('entries held after the last round are added when due, never before, each once', async () => {
    await startWorker();
    // The first one may meet a start-up round; after it was promoted, the next round is INTERVAL away.
    for (const [n, delayMs] of [
      [1, 300],
      [2, 200],
      [3, 1],
    ] as const) {
      const { addedMs, dueFromMs } = await emitAndAwait(n, delayMs);
      expect(addedMs).toBeGreaterThanOrEqual(dueFromMs);
    }
    expect(handled.map((entry) => entry.n)).toEqual([1, 2, 3]);
    expect(await redis.client.xlen('wake')).toBe(3);
    expect(await redis.client.zcard(delayedKeys('wake').schedule)).toBe(0);
  });

  it('a hold due after the schedule’s earliest announces nothing; one due before it, or on an empty schedule, announces its due time on Redis’ clock', async () => {
    const listener = redis.server.client();
    const messages: string[] = [];
    try {
      await listener.subscribe(delayedWakeChannel('quiet'));
      listener.on('message', (_channel: string, message: string) => messages.push(message));
      const producer = new RedisStreamsClient({ connection: redis.server.url });
      const emit = async (delay: number) => (await lastValueFrom(producer.emit('quiet', new RedisStreamsRecord({}, { delay })))) as string;
      try {
        const first = await emit(60_000);
        await emit(120_000); // later than the earliest: no message
        await emit(90_000); // likewise
        const earlier = await emit(30_000);
        // Messages come in publish order: the last one arriving shows none came between.
        await waitFor(() => messages.length === 2, 'the two announcements');
        const { schedule } = delayedKeys('quiet');
        const dues = [Number(await redis.client.zscore(schedule, first)), Number(await redis.client.zscore(schedule, earlier))];
        expect(messages.map((message) => Number(message.split(' ')[0]))).toEqual(dues);
        // The second number is Redis' clock at the hold: the due time minus the delay.
        expect(messages.map((message) => Number(message.split(' ')[0]) - Number(message.split(' ')[1]))).toEqual([60_000, 30_000]);
      } finally {
        await producer.close();
      }
    } finally {
      listener.disconnect();
    }
  });

  it('close() ends the wake-up connection: no subscriber is left', async () => {
    await startWorker();
    expect(await ourClients(redis.client)).toContain('nestjs-redis-streams:server-delayed-wake');
    await running.splice(0)[0]!.app.close();
    expect(await ourClients(redis.client)).toEqual([]);
    expect(await subscribers(redis.client, 'wake')).toBe(0);
  });

  it('delayed: false opens no wake-up connection', async () => {
    running.push(await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 100, delayed: false }, [WakeController]));
    expect(await ourClients(redis.client)).not.toContain('nestjs-redis-streams:server-delayed-wake');
    expect(await subscribers(redis.client, 'wake')).toBe(0);
  });
});

describe('delayed wake-up across a Redis restart (AOF)', () => {
  const { redis, startWorker, emitAndAwait, newProducer } = wakeSuite(true);

  it('the worker subscribes again after the restart and the next hold still wakes it', async () => {
    await startWorker();
    await emitAndAwait(1, 200);
    await redis.server.restart();
    // The test's own client reconnects too: a command it fails meanwhile is "not yet".
    await waitFor(async () => (await subscribers(redis.client, 'wake').catch(() => 0)) === 1, 'the worker subscribed again', { timeout: 15_000 });
    await newProducer();
    // Its last round before the restart found nothing held: without the wake-up the next is INTERVAL away.
    await emitAndAwait(2, 200);
    await emitAndAwait(3, 200);
    expect(handled.map((entry) => entry.n)).toEqual([1, 2, 3]);
  });
});

