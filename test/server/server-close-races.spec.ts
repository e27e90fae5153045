import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Command, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { claimIdleEntries } from '../../src/recovery/idle-claim.js';
import type { LeaseLostNotice } from '../../src/recovery/recovery-events.js';
import { RedisStreamsRecovery } from '../../src/recovery/redis-streams-recovery.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows } from '../helpers/stream-state.js';
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

/**
 * Records each script call `client` sends (its sha, and whether Redis answered it NOSCRIPT), so a
 * test can tell recovery's claim from the other scripts on the same connection (the delayed
 * promoter's EVALSHA, the handoff's): CLIENT LIST shows only `cmd=evalsha` for all of them.
 */
function recordScriptCalls(client: Redis): { sha: string; noScript?: boolean }[] {
  const calls: { sha: string; noScript?: boolean }[] = [];
  const send = client.sendCommand.bind(client);
  client.sendCommand = (command: Command, stream?: Parameters<Redis['sendCommand']>[1]) => {
    if (/^evalsha$/i.test(command.name)) {
      const call: { sha: string; noScript?: boolean } = { sha: String(command.args[0]) };
      calls.push(call);
      // Its own reply (its promise would give the reply of the EVAL sent again after a NOSCRIPT).
      const { resolve, reject } = command;
      command.resolve = (result) => {
        call.noScript = false;
        resolve(result);
      };
      command.reject = (error) => {
        call.noScript = /NOSCRIPT/.test(error.message);
        reject(error);
      };
    }
    return send(command, stream);
  };
  return calls;
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
    // The claim script once on the server's command connection (an id pending nowhere: nothing
    // claimed), then flushed: ioredis sends the tick's claim as EVALSHA, answered NOSCRIPT only once
    // the pause ends, then sends it again as EVAL, one more round trip after close() began.
    const commands = running.server.recoveryHost().commandConnection() as Redis;
    const scriptCalls = recordScriptCalls(commands);
    await claimIdleEntries(commands, { stream: 'claimed', group: 'g', consumer: 'A', minIdleTime: 0, entries: [{ id: '0-1' }] });
    const claimSha = (scriptCalls[0] as { sha: string }).sha;
    await redis.client.call('SCRIPT', 'FLUSH');
    const claims = () => scriptCalls.filter((call) => call.sha === claimSha).slice(1);
    // Write commands wait in Redis: the recovery tick's claim is sent but not answered.
    await redis.client.call('CLIENT', 'PAUSE', 1_000, 'WRITE');
    const tick = new RedisStreamsRecovery().runOnce({ consumer: 'A' });
    await waitFor(() => claims().length > 0, 'the claim in flight');
    const { app } = running;
    running = undefined;
    await app.close();
    await tick;
    expect(claims().map((call) => call.noScript)).toEqual([true, false]);
    expect(recovered.handled).toEqual([]);
    expect(handoffs).toEqual([3]);
    expect((await pendingRows(redis.client, 'claimed', 'g')).map((row) => [row.id, row.consumer])).toEqual(ids.map((id) => [id, 'handoff']));
  });
});
