import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseLostNotice } from '../../src/recovery/recovery-events.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const held = { contexts: [] as RedisStreamsContext[], release: undefined as (() => void) | undefined };

@Controller()
class LongController {
  @EventPattern<string>('long')
  async onEntry(@Ctx() ctx: RedisStreamsContext): Promise<void> {
    held.contexts.push(ctx);
    await new Promise<void>((resolve) => (held.release = resolve));
  }
}

describe('ctx.extendLease() with recovery.leases false (no renewal timer)', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  afterEach(async () => {
    held.release?.();
    await running?.app.close();
    running = undefined;
    held.contexts = [];
  });

  async function idleEntry(stream: string, leasesLost: LeaseLostNotice[]) {
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'A', recovery: { leases: false, enabled: false } },
      [LongController],
      [],
      (server) => server.on('leaseLost', (notice) => leasesLost.push(notice)),
    );
    const id = (await xaddEvent(redis.client, stream, 'long', {})) as string;
    await waitFor(() => held.contexts.length === 1, 'the handler runs');
    await waitFor(async () => ((await pendingRows(redis.client, stream, 'g'))[0]?.idle ?? 0) >= 300, 'the entry idle 300 ms');
    return { id, ctx: held.contexts[0] as RedisStreamsContext };
  }

  it('resets the idle time now (owner-checked, delivery count unchanged)', async () => {
    const lost: LeaseLostNotice[] = [];
    const { id, ctx } = await idleEntry('long', lost);
    const before = (await pendingRows(redis.client, 'long', 'g'))[0];
    await ctx.extendLease();
    const after = (await pendingRows(redis.client, 'long', 'g'))[0];
    expect(after).toMatchObject({ id, consumer: 'A', deliveries: 1 });
    expect(after?.idle).toBeLessThan(before?.idle ?? 0);
    expect(lost).toEqual([]);
  });

  it('never takes back an entry another consumer claimed: reports the lease lost', async () => {
    const lost: LeaseLostNotice[] = [];
    const { id, ctx } = await idleEntry('long', lost);
    await redis.client.call('XCLAIM', 'long', 'g', 'B', 0, id, 'JUSTID');
    await ctx.extendLease();
    expect((await pendingRows(redis.client, 'long', 'g')).map((row) => [row.id, row.consumer])).toContainEqual([id, 'B']);
    expect(lost).toEqual([expect.objectContaining({ stream: 'long', group: 'g', id, reason: 'not_owner', owner: 'B' })]);
  });
});
