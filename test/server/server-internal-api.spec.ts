import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldsFromArray } from '../../src/codec/wire-format.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

const claimed = {
  gate: undefined as Promise<void> | undefined,
  open: undefined as (() => void) | undefined,
  seen: [] as Array<{ id: string; deliveryCount: number; data: unknown }>,
};
const lane = { running: 0, maxRunning: 0, done: 0 };

@Controller()
class RecoveryTargetController {
  @EventPattern<string>('recoverable')
  async onEntry(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    claimed.seen.push({ id: ctx.getId(), deliveryCount: ctx.getDeliveryCount(), data });
    await claimed.gate;
  }

  @EventPattern<string>('one-at-a-time', { concurrency: 1, maxDeliveries: 5, minIdleTime: 'PT30S', recovery: false })
  async onSerial(@Payload() _data: unknown): Promise<void> {
    lane.running++;
    lane.maxRunning = Math.max(lane.maxRunning, lane.running);
    await sleep(2);
    lane.running--;
    lane.done++;
  }
}

/** CLIENT LIST flags of our reader connection (`b` = blocked in a command). */
async function readerFlags(client: Redis): Promise<string> {
  const list = (await client.client('LIST')) as string;
  const line = list.split('\n').find((l) => l.includes('name=nestjs-redis-streams:server-reader:g '));
  return /flags=(\S*)/.exec(line ?? '')?.[1] ?? '';
}

describe('RedisStreamsServer: the hooks recovery builds on', () => {
  const redis = useRedisServer();
  let running: RunningServer;

  beforeAll(async () => {
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'alive', concurrency: 4, prefetch: 8 }, [RecoveryTargetController]);
  });
  afterAll(async () => {
    claimed.open?.();
    await running.app.close();
  });

  it('handledStreams() describes every bound stream with its handler options', () => {
    const streams = running.server.recoveryHost().handledStreams();
    expect(running.server.recoveryHost().handoffConsumerName()).toBe('handoff');
    expect(streams).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stream: 'recoverable', group: 'g', raw: false, ackMode: 'auto', concurrency: 4, maxDeliveries: undefined, minIdleTime: undefined, recovery: undefined }),
        expect.objectContaining({ stream: 'one-at-a-time', group: 'g', concurrency: 1, maxDeliveries: 5, minIdleTime: 30_000, recovery: false }),
      ]),
    );
  });

  it('a claim gets slots from a read blocked on idle streams, and claimed entries go through the same dispatch and ack', async () => {
    const { server } = running;
    // Another consumer took two entries and died.
    claimed.gate = new Promise((resolve) => (claimed.open = resolve));
    const abandonedIds: string[] = [];
    // Written and taken by "crashed" in one MULTI, so our server's blocked read never sees them.
    const tx = redis.client.multi();
    tx.xadd('recoverable', '*', 'pattern', 'recoverable', 'data', JSON.stringify({ n: 'a' }));
    tx.xadd('recoverable', '*', 'pattern', 'recoverable', 'data', JSON.stringify({ n: 'b' }));
    tx.xreadgroup('GROUP', 'g', 'crashed', 'COUNT', 2, 'STREAMS', 'recoverable', '>');
    const results = (await tx.exec()) ?? [];
    abandonedIds.push(results[0]?.[1] as string, results[1]?.[1] as string);
    expect((await pendingRows(redis.client, 'recoverable', 'g', 'crashed')).map((row) => row.id)).toEqual(abandonedIds);

    // The server's read is blocked on idle streams, holding every free slot.
    await waitFor(async () => (await readerFlags(redis.client)).includes('b') && server.recoveryHost().freePrefetchSlots() === 0, 'blocked read holding the slots');
    const reserved = await server.recoveryHost().reservePrefetchSlots(2);
    expect(reserved).toBe(2);

    const taken = (await redis.client.call('XCLAIM', 'recoverable', 'g', 'alive', 0, ...abandonedIds)) as Array<[string, string[]]>;
    const counts = new Map((await pendingRows(redis.client, 'recoverable', 'g', 'alive')).map((row) => [row.id, row.deliveries]));
    const entries = taken.map(([id, flat]) => ({ id, fields: fieldsFromArray(flat), deliveryCount: counts.get(id) ?? 0 }));
    expect(server.recoveryHost().dispatchEntries('recoverable', 'g', entries, reserved)).toBe(2);
    await waitFor(() => claimed.seen.length === 2, 'claimed entries handled');
    expect(claimed.seen).toEqual([
      { id: abandonedIds[0], deliveryCount: 2, data: { n: 'a' } },
      { id: abandonedIds[1], deliveryCount: 2, data: { n: 'b' } },
    ]);
    expect(server.recoveryHost().isInFlight('recoverable', 'g', abandonedIds[0] as string)).toBe(true);
    // The same entries again (a second recoverer's view): skipped, nothing runs twice.
    expect(server.recoveryHost().dispatchEntries('recoverable', 'g', entries)).toBe(0);

    claimed.open?.();
    await waitFor(async () => (await pendingRows(redis.client, 'recoverable', 'g')).length === 0, 'claimed entries acked');
    expect(server.recoveryHost().isInFlight('recoverable', 'g', abandonedIds[0] as string)).toBe(false);
    expect(claimed.seen).toHaveLength(2);
    // Reads go on afterwards.
    await xaddEvent(redis.client, 'recoverable', 'recoverable', { n: 'later' });
    await waitFor(() => claimed.seen.length === 3, 'later entry read');
  });

  it('extras.concurrency caps the handlers of one stream', async () => {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < 40; n++) pipeline.xadd('one-at-a-time', '*', 'pattern', 'one-at-a-time', 'data', JSON.stringify({ n }));
    await pipeline.exec();
    await waitFor(() => lane.done === 40, 'all handled');
    expect(lane.maxRunning).toBe(1);
  });
});
