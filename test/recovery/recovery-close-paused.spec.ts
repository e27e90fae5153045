import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import type { RedisStreamsServerOptions } from '../../src/server/options.js';
import { startServer } from '../fixtures/server-app.js';
import { ourClients, pendingRows } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** Entries whose handler started; `fail` makes the next ones throw once Redis is paused. */
const handlers = { started: [] as string[], failNow: undefined as (() => void) | undefined };

@Controller()
class HeldController {
  /** Runs past close() (its entry must stay pending): nothing settles it. */
  @EventPattern<string>('held')
  async onHeld(_data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    handlers.started.push(ctx.getId());
    await new Promise(() => undefined);
  }

  /** Fails when the test says so, Redis paused: its error record's SET is then in flight. */
  @EventPattern<string>('failing')
  async onFailing(_data: unknown, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    handlers.started.push(ctx.getId());
    await new Promise<void>((resolve) => (handlers.failNow = resolve));
    throw new Error('failed while Redis was paused');
  }
}

/** Whether a command carrying `id` (as an argument or in a key) was written on `connection` and waits for its reply. */
function awaitingReply(connection: Redis, id: string): boolean {
  return connection.commandQueue.toArray().some(({ command }) => command.args.some((arg) => String(arg).includes(id)));
}

/** `close()`'s outcome within `ms`: 'closed', or 'still waiting' (it used to wait for good). */
function closedWithin(close: Promise<void>, ms: number): Promise<'closed' | 'still waiting'> {
  return Promise.race([close.then(() => 'closed' as const), sleep(ms).then(() => 'still waiting' as const)]);
}

/**
 * close() with Redis paused (SIGSTOP: the sockets stay open, nothing answers) while a lease renewal
 * or a handler error's record is in flight: both waits are bounded by close()'s one wait on Redis,
 * and the command given up on, failing later on the closed connection (Redis killed), raises
 * nothing after close(). Every write is on disk before it is answered, so what Redis held survives the kill.
 */
describe('recovery at close() with Redis paused (real redis-server)', () => {
  const redis = useRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  beforeAll(() => {
    // The spec kills Redis on purpose; the helper client just reconnects.
    redis.client.on('error', () => undefined);
  });

  async function closeWithCommandInFlight(stream: string, consumer: string, options: Partial<RedisStreamsServerOptions>, inFlight: (id: string) => void) {
    handlers.started.length = 0;
    const { client } = redis;
    const { app, server } = await startServer(
      { connection: redis.server.url, group: 'g', consumer, shutdownTimeout: 200, ...options } as RedisStreamsServerOptions,
      [HeldController],
    );
    const commands = server.commandConnection() as Redis;
    let closedAt: number | undefined;
    const errorsAfterClose: string[] = [];
    server.on('error', (error) => {
      if (closedAt !== undefined) errorsAfterClose.push((error as Error).message);
    });
    const id = (await client.xadd(stream, '*', 'pattern', stream, 'data', '{}')) as string;
    await waitFor(() => handlers.started.includes(id), 'the handler started');

    let outcome: 'closed' | 'still waiting' | undefined;
    let closing: Promise<void> | undefined;
    redis.server.pause();
    try {
      inFlight(id);
      // A reply Redis sent just before it stopped is read first: what then waits was not answered.
      await new Promise((resolve) => setImmediate(resolve));
      // The command carrying the entry's id (renewal or record), written and waiting for its reply:
      // sent before the pause or after, it will not be answered.
      await waitFor(() => awaitingReply(commands, id), 'the command sent to the paused Redis', { timeout: 5_000 });
      const started = performance.now();
      closing = app.close();
      outcome = await closedWithin(closing, 8_000);
      closedAt = performance.now();
      // The readers' stop spends the one 2 s wait; the renewal or record is then given up on at once.
      if (outcome === 'closed') expect(closedAt - started).toBeLessThan(5_000);
    } finally {
      // Not closed in time (or failed before): let close() end, nothing left running.
      if (outcome !== 'closed') {
        redis.server.resume();
        await (closing ?? app.close());
      }
    }
    await closing;
    expect(outcome).toBe('closed');
    // Redis dies paused: the command given up on fails on the closed connection, after close().
    await redis.server.kill();
    await waitFor(() => commands.status === 'end', 'the command connection ended', { timeout: 10_000 });
    await new Promise((resolve) => setImmediate(resolve));
    const lateErrors = [...errorsAfterClose];
    await redis.server.restart();
    await waitFor(async () => (await ourClients(client).catch(() => undefined)) !== undefined, 'Redis answers again');
    expect(lateErrors).toEqual([]);
    // Nothing lost: the entry was neither acked nor handed off; it stays pending for this consumer.
    expect((await pendingRows(client, stream, 'g')).map((row) => [row.id, row.consumer, row.deliveries])).toEqual([[id, consumer, 1]]);
  }

  it('a lease renewal in flight: close() ends within its one wait and the entry stays pending', async () => {
    // Renewals every 100 ms, on the event loop (no lease thread); no recovery ticks on the connection.
    await closeWithCommandInFlight('held', 'renewing', { recovery: { enabled: false, leaseInterval: 100, leases: { thread: false } } }, () => undefined);
  }, 30_000);

  it('a handler error record being written: close() ends within its one wait and the entry stays pending', async () => {
    await closeWithCommandInFlight('failing', 'recording', { recovery: { enabled: false, leases: false } }, () => handlers.failNow?.());
  }, 30_000);
});
