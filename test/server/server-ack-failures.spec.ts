import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const seen = { auto: [] as string[], manual: [] as RedisStreamsContext[] };

@Controller()
class AutoController {
  @EventPattern<string>('auto-acked')
  onEntry(@Ctx() ctx: RedisStreamsContext): void {
    seen.auto.push(ctx.getId());
  }
}

@Controller()
class ManualController {
  @EventPattern<string>('manual-acked', { ackMode: 'manual' })
  onEntry(@Ctx() ctx: RedisStreamsContext): void {
    seen.manual.push(ctx);
  }
}

describe('RedisStreamsServer: a failed XACK is never silent', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;
  let errors: Error[] = [];
  /** A user allowed everything but XACK. */
  let noAckUrl: string;

  beforeAll(async () => {
    await redis.client.call('ACL', 'SETUSER', 'noack', 'on', '>secret', '~*', '&*', '+@all', '-xack');
    noAckUrl = `redis://noack:secret@127.0.0.1:${redis.server.port}`;
  });

  afterEach(async () => {
    await running?.app.close();
    running = undefined;
    errors = [];
    seen.auto = [];
    seen.manual = [];
  });

  /** prefetch 1: a later entry is only read once the slot of the one before was freed. */
  async function start(connection: string, controller: typeof AutoController | typeof ManualController, consumer: string): Promise<RunningServer> {
    return startServer({ connection, group: 'g', consumer, prefetch: 1, concurrency: 1, recovery: false }, [controller], [], (server) =>
      server.on('error', (error) => errors.push(error)),
    );
  }

  it('auto mode: an XACK Redis refuses fires the error event; the entry stays pending and its slot is freed', async () => {
    running = await start(noAckUrl, AutoController, 'auto');
    const first = (await xaddEvent(redis.client, 'auto-acked', 'auto-acked', { n: 1 })) as string;
    const second = (await xaddEvent(redis.client, 'auto-acked', 'auto-acked', { n: 2 })) as string;
    await waitFor(() => errors.length === 2, 'an error event per failed XACK');
    expect(seen.auto).toEqual([first, second]);
    expect(errors[0]?.message).toMatch(/^XACK of 1 entries on "auto-acked" \(group "g"\) failed; they stay pending: NOPERM/);
    expect((await pendingRows(redis.client, 'auto-acked', 'g')).map((row) => row.id)).toEqual([first, second]);
  });

  it('manual mode: ctx.ack() rejects when the XACK failed (and fires the error event); the entry stays pending', async () => {
    running = await start(noAckUrl, ManualController, 'manual-noperm');
    const id = (await xaddEvent(redis.client, 'manual-acked', 'manual-acked', { n: 1 })) as string;
    await waitFor(() => seen.manual.length === 1, 'the entry handled');
    const ctx = seen.manual[0] as RedisStreamsContext;
    await expect(ctx.ack()).rejects.toThrow(/XACK of 1 entries on "manual-acked" \(group "g"\) failed; they stay pending: NOPERM/);
    // A second call reports the same outcome; it does not pretend to have acked.
    await expect(ctx.ack()).rejects.toThrow(/NOPERM/);
    expect(errors.map((error) => error.message)).toEqual([expect.stringMatching(/XACK of 1 entries on "manual-acked"/)]);
    expect((await pendingRows(redis.client, 'manual-acked', 'g')).map((row) => row.id)).toEqual([id]);
    // Its slot was freed: the next entry is read.
    const next = (await xaddEvent(redis.client, 'manual-acked', 'manual-acked', { n: 2 })) as string;
    await waitFor(() => seen.manual.length === 2, 'the next entry read');
    expect(seen.manual[1]?.getId()).toBe(next);
  });

  it('manual mode: ctx.ack() after close() rejects; the entry stays pending', async () => {
    running = await start(redis.server.url, ManualController, 'manual-closed');
    const id = (await xaddEvent(redis.client, 'manual-acked', 'manual-acked', { n: 3 })) as string;
    await waitFor(() => seen.manual.some((ctx) => ctx.getId() === id), 'the entry handled');
    const ctx = seen.manual.find((c) => c.getId() === id) as RedisStreamsContext;
    await running.app.close();
    running = undefined;
    await expect(ctx.ack()).rejects.toThrow(`cannot ack entry ${id} of "manual-acked": the server is closed; it stays pending`);
    expect((await pendingRows(redis.client, 'manual-acked', 'g', 'manual-closed')).map((row) => row.id)).toContain(id);
  });

  it('manual mode: ctx.ack() resolves once Redis acked the entry', async () => {
    running = await start(redis.server.url, ManualController, 'manual-ok');
    const id = (await xaddEvent(redis.client, 'manual-acked', 'manual-acked', { n: 4 })) as string;
    await waitFor(() => seen.manual.some((ctx) => ctx.getId() === id), 'the entry handled');
    await (seen.manual.find((c) => c.getId() === id) as RedisStreamsContext).ack();
    expect((await pendingRows(redis.client, 'manual-acked', 'g')).map((row) => row.id)).not.toContain(id);
    expect(errors).toEqual([]);
  });
});
