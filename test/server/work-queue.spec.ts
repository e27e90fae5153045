import { Controller, type Type } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsCapabilityError, RedisStreamsOptionError } from '../../src/errors.js';
import { moveToDeadLetter } from '../../src/recovery/dead-letter-move.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { AckBatcher } from '../../src/server/ack-batcher.js';
import type { StreamBinding } from '../../src/server/in-flight.js';
import type { InFlightEntry } from '../../src/server/in-flight.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { ourClients, pendingCount } from '../helpers/stream-state.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const seen = { queue: [] as string[], g1: [] as string[], g2: [] as string[] };
const gate = { hold: false, release: undefined as (() => void) | undefined };

@Controller()
class QueueController {
  @EventPattern<string>('jobs')
  async onJob(_data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    if (gate.hold) await new Promise<void>((resolve) => (gate.release = resolve));
    seen.queue.push(ctx.getId());
  }
}

@Controller()
class TwoGroupsController {
  @EventPattern<string>('shared', { group: 'g1' })
  onG1(_data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    seen.g1.push(ctx.getId());
  }

  @EventPattern<string>('shared', { group: 'g2' })
  onG2(_data: unknown, @Ctx() ctx: RedisStreamsContext): void {
    seen.g2.push(ctx.getId());
  }
}

@Controller()
class PoisonController {
  @EventPattern<string>('poison')
  onPoison(@Payload() data: { n: number }): void {
    throw new Error(`refused ${data.n}`);
  }
}

async function addJobs(redis: Redis, stream: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 5_000) {
    const pipeline = redis.pipeline();
    for (let n = start; n < Math.min(count, start + 5_000); n++) pipeline.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n }));
    for (const [, id] of (await pipeline.exec()) ?? []) ids.push(id as string);
  }
  return ids;
}

describe('server workQueue: XACKDEL instead of XACK (Redis 8.2+)', () => {
  const redis = useRedisServer();
  const running: RunningServer[] = [];
  const start = async (options: Partial<RedisStreamsServerOptions>, controllers: Type[] = [QueueController]) => {
    const started = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w1', blockMs: 200, recovery: false, ...options }, controllers);
    running.push(started);
    return started;
  };
  afterEach(async () => {
    gate.hold = false;
    gate.release?.();
    for (const r of running.splice(0)) await r.app.close();
    seen.queue.length = seen.g1.length = seen.g2.length = 0;
    await redis.client.flushall();
  });

  it('rejects a bad workQueue option by name', () => {
    expect(() => new RedisStreamsServer({ group: 'g', workQueue: { policy: 'delref' as 'acked' } })).toThrow(RedisStreamsOptionError);
    expect(() => new RedisStreamsServer({ group: 'g', workQueue: { policy: 'delref' as 'acked' } })).toThrow(/"workQueue\.policy": must be "keepref" or "acked"/);
    expect(() => new RedisStreamsServer({ group: 'g', workQueue: 1 as unknown as boolean })).toThrow(/"workQueue"/);
  });

  it('a queue of 20 000 entries ends empty with every entry handled once; without XACKDEL listen() fails naming workQueue', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) {
      const server = new RedisStreamsServer({ connection: redis.server.url, group: 'g', consumer: 'w1', workQueue: true, recovery: false });
      const failure = await new Promise<unknown>((resolve) => void server.listen(resolve));
      expect(failure).toBeInstanceOf(RedisStreamsCapabilityError);
      expect(failure).toMatchObject({ option: 'workQueue', capability: 'xackdel', since: '8.2' });
      expect((failure as Error).message).toMatch(/Option "workQueue" needs XACKDEL \(capability "xackdel", Redis 8\.2 or later\)/);
      // Nothing was created and nothing is left connected.
      expect(await redis.client.exists('jobs')).toBe(0);
      await waitFor(async () => (await ourClients(redis.client)).length === 0, 'the server connections to close');
      return;
    }
    // The issue asks for 100k; 20k keeps this test within a few seconds on a shared machine.
    const count = 20_000;
    const ids = await addJobs(redis.client, 'jobs', count);
    await start({ workQueue: true, concurrency: 100, readBatch: 500 });
    await waitFor(() => seen.queue.length >= count, `${count} entries to be handled`, { timeout: 60_000 });
    await waitFor(async () => (await redis.client.xlen('jobs')) === 0, 'the stream to be empty', { timeout: 10_000 });
    expect(new Set(seen.queue).size).toBe(count);
    expect([...seen.queue].sort()).toEqual([...ids].sort());
    expect(await pendingCount(redis.client, 'jobs', 'g')).toBe(0);
  }, 90_000);

  it('two groups with ACKED: an entry is deleted only after both acknowledged it', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) return; // the named error is asserted by the test above on every server
    await redis.client.xgroup('CREATE', 'jobs', 'other', '0', 'MKSTREAM');
    const [id] = await addJobs(redis.client, 'jobs', 1);
    // Group g (this server) handles and acks it: another group ("other") has not, so it stays.
    await start({ workQueue: { policy: 'acked' } });
    await waitFor(async () => (await pendingCount(redis.client, 'jobs', 'g')) === 0 && seen.queue.length === 1, 'group g to ack');
    expect(await redis.client.xlen('jobs')).toBe(1);
    // The other group reads and acknowledges it (with XACKDEL ACKED, as a work-queue server would): now it goes.
    await redis.client.xreadgroup('GROUP', 'other', 'c', 'STREAMS', 'jobs', '>');
    expect(await redis.client.xlen('jobs')).toBe(1);
    expect(await redis.client.call('XACKDEL', 'jobs', 'other', 'ACKED', 'IDS', 1, id!)).toEqual([1]);
    expect(await redis.client.xlen('jobs')).toBe(0);
  });

  it('workQueue: true on a stream two groups of the server read uses ACKED: both handle every entry, then it goes', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) return; // the named error is asserted above on every server
    const ids = await addJobs(redis.client, 'shared', 200);
    await start({ workQueue: true }, [TwoGroupsController]);
    await waitFor(() => seen.g1.length >= 200 && seen.g2.length >= 200, 'both groups to handle every entry');
    await waitFor(async () => (await redis.client.xlen('shared')) === 0, 'the stream to be empty');
    expect([...seen.g1].sort()).toEqual([...ids].sort());
    expect([...seen.g2].sort()).toEqual([...ids].sort());
  });

  it('a group deleted while an entry was handled: the group is recreated at 0 and said so, the entry comes back', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) return;
    const [id] = await addJobs(redis.client, 'jobs', 1);
    gate.hold = true;
    const { server } = await start({ workQueue: true });
    const recreated: unknown[] = [];
    server.on('groupRecreated', (info) => recreated.push(info));
    await waitFor(() => gate.release !== undefined, 'the handler to start');
    await redis.client.xgroup('DESTROY', 'jobs', 'g');
    gate.hold = false;
    gate.release?.();
    // Whoever notices first (the reader's NOGROUP or XACKDEL's -1) recreates it, once.
    await waitFor(() => recreated.length === 1, 'the group to be recreated');
    expect(recreated).toEqual([{ stream: 'jobs', group: 'g' }]);
    // Recreated at 0: the entry (still in the stream) is delivered again. Whether it is handled again
    // depends on which reached Redis first: the handler's XACKDEL (the group's gone: the new
    // delivery is handled again) or the reader's re-read (that ack covers the new delivery: handled
    // once). Either way it is deleted promptly, never left pending until recovery.
    await waitFor(async () => (await redis.client.xlen('jobs')) === 0, 'the entry to be deleted', { timeout: 5_000 });
    expect(seen.queue.length === 1 || seen.queue.length === 2).toBe(true);
    expect(new Set(seen.queue)).toEqual(new Set([id]));
    expect(await pendingCount(redis.client, 'jobs', 'g')).toBe(0);
  });

  it('the ack batcher reads XACKDEL -1 for a missing group as NOGROUP: recreates the group and reports the batch', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) return;
    const [first, second] = await addJobs(redis.client, 'jobs', 2);
    await redis.client.xgroup('CREATE', 'jobs', 'g', '0');
    await redis.client.xreadgroup('GROUP', 'g', 'c', 'STREAMS', 'jobs', '>');
    const binding = { stream: 'jobs', group: 'g' } as StreamBinding;
    const reported: Error[] = [];
    const recreatedFor: string[] = [];
    const batcher = new AckBatcher(redis.client, () => undefined, (error) => reported.push(error), undefined, () => 'KEEPREF', async (b) => {
      recreatedFor.push(`${b.stream}/${b.group}`);
    });
    // The group is there: the first entry is acked and deleted.
    await batcher.add({ binding, id: first } as InFlightEntry);
    expect(await redis.client.xlen('jobs')).toBe(1);
    // An id no longer pending (acked meanwhile) is -1 too, but the group is there: nothing to report.
    await batcher.add({ binding, id: first } as InFlightEntry);
    expect(reported).toEqual([]);
    // The group is gone: XACKDEL answers -1 (no NOGROUP error); the batch is reported and the group recreated.
    await redis.client.xgroup('DESTROY', 'jobs', 'g');
    await expect(batcher.add({ binding, id: second } as InFlightEntry)).rejects.toThrow(
      /XACKDEL of 1 entries on "jobs" \(group "g"\) failed; they stay pending: the group was missing \(XACKDEL answered -1\)/,
    );
    expect(recreatedFor).toEqual(['jobs/g']);
    expect(reported).toHaveLength(1);
    expect(await redis.client.xlen('jobs')).toBe(1);
  });

  it('dead-letter moves delete the entry from the source stream in work-queue mode', async () => {
    const { xackdel } = await capabilitiesOf(redis.client);
    if (!xackdel) {
      // moveToDeadLetter's own option is refused by the server's script call (XACKDEL unknown), never silently ignored.
      await addJobs(redis.client, 'poison', 1);
      await redis.client.xgroup('CREATE', 'poison', 'g', '0');
      const [[, [[id]]]] = (await redis.client.xreadgroup('GROUP', 'g', 'c', 'STREAMS', 'poison', '>')) as [string, [string, string[]][]][];
      await expect(moveToDeadLetter(redis.client, { stream: 'poison', group: 'g', ids: [id!], reason: 'max_deliveries', deleteEntry: 'keepref' })).rejects.toThrow(/XACKDEL/i);
      expect(await pendingCount(redis.client, 'poison', 'g')).toBe(1);
      expect(await redis.client.exists('{poison}:dead')).toBe(0);
      return;
    }
    const [id] = await addJobs(redis.client, 'poison', 1);
    const { server } = await start({ workQueue: true, recovery: { minIdleTime: 100, interval: 50, maxDeliveries: 1 } }, [PoisonController]);
    const letters: unknown[] = [];
    server.on('deadLetter', (letter) => letters.push(letter));
    await waitFor(() => letters.length === 1, 'the entry to be dead-lettered');
    expect(await redis.client.xlen('poison')).toBe(0);
    const dead = (await redis.client.xrange('{poison}:dead', '-', '+')) as [string, string[]][];
    expect(dead).toHaveLength(1);
    expect(dead[0]![1]).toEqual(expect.arrayContaining(['dlq:id', id]));
    expect(await pendingCount(redis.client, 'poison', 'g')).toBe(0);
  });
});
