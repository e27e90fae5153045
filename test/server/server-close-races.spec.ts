import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseLostNotice } from '../../src/recovery/recovery-events.js';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { pendingRows, startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const gate = { open: undefined as (() => void) | undefined, started: 0 };

const recovered = { handled: [] as string[] };

@Controller()
class RecoveredController {
  @EventPattern<string>('claimed')
  onEntry(): void {
    recovered.handled.push('ran');
  }
}

/** CLIENT LIST line of the server's command connection. */
async function commandConnection(redis: { client(...args: unknown[]): Promise<unknown> }): Promise<string> {
  const list = String(await redis.client('LIST'));
  return list.split('\n').find((line) => / name=nestjs-redis-streams:server /.test(line)) ?? '';
}

@Controller()
class GatedController {
  @EventPattern<string>('closing')
  async onEntry(): Promise<void> {
    gate.started++;
    await new Promise<void>((resolve) => (gate.open = resolve));
  }
}

describe('RedisStreamsServer: what runs concurrently with close()', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  afterEach(async () => {
    gate.open?.();
    await running?.app.close();
    running = undefined;
    gate.started = 0;
  });

  it('lease renewals racing the handoff report no lost lease for the entries handed off', async () => {
    const total = 5_000;
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < total; n++) pipeline.xadd('closing', '*', 'pattern', 'closing', 'data', '{}');
    await pipeline.exec();
    const leasesLost: LeaseLostNotice[] = [];
    const handoffs: number[] = [];
    // concurrency 1: one handler runs, every other entry is queued; renewals run back to back
    // (each is 50 script calls), and the handoff takes 5 batches: they interleave.
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'c', prefetch: total, concurrency: 1, recovery: { enabled: false, leaseInterval: 1 } },
      [GatedController],
      [],
      (server) => {
        server.on('leaseLost', (notice) => leasesLost.push(notice));
        server.on('handoff', ({ count }) => {
          handoffs.push(count);
          gate.open?.();
        });
      },
    );
    const { server, app } = running;
    await waitFor(() => server.recoveryHost().inFlightIds('closing', 'g').length === total, 'every entry fetched', { timeout: 20_000 });
    running = undefined;
    await app.close();
    expect(gate.started).toBe(1);
    expect(handoffs).toEqual([total - 1]);
    expect(leasesLost).toEqual([]);
    const rows = await pendingRows(redis.client, 'closing', 'g');
    expect(rows.filter((row) => row.consumer === 'handoff')).toHaveLength(total - 1);
    expect(rows).toHaveLength(total - 1);
  });

  it('entries of an XCLAIM in flight when close() starts are handed off, not left pending here', async () => {
    await redis.client.xgroup('CREATE', 'claimed', 'g', '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push((await redis.client.xadd('claimed', '*', 'pattern', 'claimed', 'data', '{}')) as string);
    await redis.client.call('XREADGROUP', 'GROUP', 'g', 'dead', 'COUNT', 3, 'STREAMS', 'claimed', '>');
    const handoffs: number[] = [];
    running = await startServer(
      { connection: redis.server.url, group: 'g', consumer: 'A', blockMs: 200, recovery: { enabled: false, minIdleTime: 100 } },
      [RecoveredController],
      [],
      (server) => server.on('handoff', ({ count }) => handoffs.push(count)),
    );
    await waitFor(async () => (await pendingRows(redis.client, 'claimed', 'g')).every((row) => row.idle >= 100), 'the dead consumer\'s entries idle');
    // Write commands wait in Redis: the recovery tick's claim (claim-idle.lua's XCLAIM) is sent but not answered.
    await redis.client.call('CLIENT', 'PAUSE', 1_000, 'WRITE');
    const tick = new RedisStreamsRecovery().runOnce({ consumer: 'A' });
    await waitFor(async () => / cmd=(evalsha|eval) /.test(await commandConnection(redis.client)), 'the XCLAIM in flight');
    const { app } = running;
    running = undefined;
    await app.close();
    await tick;
    expect(recovered.handled).toEqual([]);
    expect(handoffs).toEqual([3]);
    expect((await pendingRows(redis.client, 'claimed', 'g')).map((row) => [row.id, row.consumer])).toEqual(ids.map((id) => [id, 'handoff']));
  });
});
