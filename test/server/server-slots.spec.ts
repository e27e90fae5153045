import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingCount, pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** Entries with `gated: true` wait until the test opens the gate. */
const gate = { open: undefined as (() => void) | undefined, promise: undefined as Promise<void> | undefined };
const seen = { fast: [] as number[], manual: [] as RedisStreamsContext[] };

function closeGate(): void {
  gate.promise = new Promise<void>((resolve) => (gate.open = resolve));
}

@Controller()
class GatedController {
  @EventPattern<string>('gated')
  async onEntry(@Payload() data: { n: number; gated: boolean }): Promise<void> {
    if (data.gated) await gate.promise;
    else seen.fast.push(data.n);
  }
}

@Controller()
class ManualController {
  @EventPattern<string>('kept', { ackMode: 'manual' })
  onEntry(@Ctx() ctx: RedisStreamsContext): void {
    // Neither acked nor nacked: the entry keeps its slot until the test acks it.
    seen.manual.push(ctx);
  }
}

@Controller()
class FragileRequestController {
  @MessagePattern('fragile', { ackMode: 'manual' })
  onRequest(@Payload() data: { n: number }): never {
    throw new Error(`request ${data.n} failed`);
  }
}

describe('RedisStreamsServer: prefetch slots come back to the reader', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  afterEach(async () => {
    gate.open?.();
    await running?.app.close();
    running = undefined;
    seen.fast = [];
    seen.manual = [];
  });

  it('an ack that frees one slot below the low-water mark still wakes the reader (no stall with free slots)', async () => {
    closeGate();
    for (let n = 0; n < 3; n++) await xaddEvent(redis.client, 'gated', 'gated', { n, gated: true });
    await xaddEvent(redis.client, 'gated', 'gated', { n: 3, gated: false });
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'c', prefetch: 4, concurrency: 4, readBatch: 4, blockMs: 200 },
      [GatedController],
    );
    await waitFor(() => seen.fast.length === 1, 'the first fast entry handled');
    await waitFor(async () => (await pendingCount(redis.client, 'gated', 'g')) === 3, 'the fast entry acked');
    // One prefetch slot and one handler slot are free: the next entry must be read.
    await xaddEvent(redis.client, 'gated', 'gated', { n: 4, gated: false });
    await waitFor(() => seen.fast.length === 2, 'the second fast entry handled', { timeout: 5_000 });
    expect(seen.fast).toEqual([3, 4]);
  });

  it('manual mode: acking some of a full prefetch lets the reader read again', async () => {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < 200; n++) pipeline.xadd('kept', '*', 'pattern', 'kept', 'data', JSON.stringify({ n }));
    await pipeline.exec();
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'c', prefetch: 200 }, [ManualController]);
    await waitFor(() => seen.manual.length === 200, 'a full prefetch handled');
    expect(running.server.recoveryHost().freePrefetchSlots()).toBe(0);
    await Promise.all(seen.manual.slice(0, 60).map((ctx) => ctx.ack()));
    expect(await pendingCount(redis.client, 'kept', 'g')).toBe(140);
    const lateId = await xaddEvent(redis.client, 'kept', 'kept', { n: 200 });
    await waitFor(() => seen.manual.length === 201, 'the new entry read', { timeout: 5_000 });
    expect(seen.manual[200]?.getId()).toBe(lateId);
    await Promise.all(seen.manual.slice(60).map((ctx) => ctx.ack()));
    expect(await pendingCount(redis.client, 'kept', 'g')).toBe(0);
  });

  it('manual mode: a request handler that throws frees its slot (answered with the error, left pending)', async () => {
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'c', prefetch: 3, concurrency: 3, readBatch: 1, recovery: false },
      [FragileRequestController],
    );
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) {
      ids.push(
        (await redis.client.xadd('fragile', '*', 'pattern', 'fragile', 'data', JSON.stringify({ n }), 'id', `req-${n}`, 'replyTo', 'fragile-replies')) as string,
      );
    }
    // prefetch 3: the 4th and 5th requests are only read if the failed ones gave their slots back.
    await waitFor(async () => (await redis.client.xlen('fragile-replies')) === 5, 'every request answered', { timeout: 5_000 });
    const replies = (await redis.client.xrange('fragile-replies', '-', '+')) as Array<[string, string[]]>;
    expect(replies.map(([, fields]) => fields[1]).sort()).toEqual(['req-0', 'req-1', 'req-2', 'req-3', 'req-4']);
    // As for a failed event in manual mode: not acked, so it stays pending (recovery brings it back).
    expect((await pendingRows(redis.client, 'fragile', 'g')).map((row) => row.id)).toEqual(ids);
  });

  it('reservePrefetchSlots: with no read holding slots it returns what is free at once (no wait, no reader interrupt)', async () => {
    // A user that may not XREADGROUP: the reader backs off and holds no reservation.
    await redis.client.call('ACL', 'SETUSER', 'noread', 'on', '>secret', '~*', '&*', '+@all', '-xreadgroup');
    closeGate();
    running = await startServer(
      {
        connection: `redis://noread:secret@127.0.0.1:${redis.server.port}`,
        group: 'g',
        consumer: 'c',
        prefetch: 4,
        concurrency: 4,
        reconnectDelay: { initialMs: 60_000 },
        recovery: false,
      },
      [GatedController],
    );
    const { server } = running;
    await waitFor(() => server.recoveryHost().freePrefetchSlots() === 4, 'the failed read gave its slots back');
    const held = [0, 1, 2].map((n) => ({ id: `1-${n}`, fields: { pattern: 'gated', data: JSON.stringify({ n, gated: true }) }, deliveryCount: 2 }));
    expect(server.recoveryHost().dispatchEntries('gated', 'g', held)).toBe(3);
    expect(server.recoveryHost().freePrefetchSlots()).toBe(1);
    const reserved = server.recoveryHost().reservePrefetchSlots(3);
    // Settled before the next macrotask: it did not wait for slots no read holds.
    const first = await Promise.race([reserved, new Promise<string>((resolve) => setImmediate(() => resolve('still waiting')))]);
    expect(first).toBe(1);
    server.recoveryHost().releasePrefetchSlots(1);
    expect(server.recoveryHost().freePrefetchSlots()).toBe(1);
  });
});
