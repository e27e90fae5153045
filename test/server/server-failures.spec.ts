import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Observable, throwError } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisStreamsDecodeError } from '../../src/errors.js';
import { parseDeadLetter } from '../../src/recovery/dead-letter-format.js';
import { RedisStreamsContext } from '../../src/server/context.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { pendingRows, xaddEvent } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

type Mode = 'ok' | 'throw' | 'reject' | 'observable-error' | 'observable-ok';
const state = { failing: true, handled: [] as Array<{ id: string; mode: Mode; deliveryCount: number }> };

@Controller()
class JobsController {
  @EventPattern<string>('jobs')
  onJob(@Payload() data: { mode: Mode }, @Ctx() ctx: RedisStreamsContext): unknown {
    state.handled.push({ id: ctx.getId(), mode: data.mode, deliveryCount: ctx.getDeliveryCount() });
    if (!state.failing) return undefined;
    switch (data.mode) {
      case 'throw':
        throw new Error('boom (sync)');
      case 'reject':
        return Promise.reject(new Error('boom (async)'));
      case 'observable-error':
        return throwError(() => new Error('boom (observable)'));
      case 'observable-ok':
        return new Observable((subscriber) => {
          setTimeout(() => {
            subscriber.next(1);
            subscriber.complete();
          }, 5);
        });
      default:
        return undefined;
    }
  }
}

describe('RedisStreamsServer: failures', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;

  afterEach(async () => {
    await running?.app.close();
    running = undefined;
  });

  it('a handler that throws, rejects or errors leaves exactly that entry pending; a restart with the same name redelivers it with count 2', async () => {
    state.failing = true;
    state.handled = [];
    const options = { connection: redis.server.url, group: 'g', consumer: 'stable-1' };
    running = await startServer(options, [JobsController]);
    const modes: Mode[] = ['ok', 'throw', 'ok', 'reject', 'observable-ok', 'observable-error', 'ok'];
    const ids: string[] = [];
    for (const mode of modes) ids.push((await xaddEvent(redis.client, 'jobs', 'jobs', { mode })) as string);
    const failedIds = ids.filter((_, i) => ['throw', 'reject', 'observable-error'].includes(modes[i] as string));

    await waitFor(() => state.handled.length === modes.length, 'every entry handled once');
    await waitFor(async () => (await pendingRows(redis.client, 'jobs', 'g')).length === failedIds.length, 'only failed entries pending');
    const pending = await pendingRows(redis.client, 'jobs', 'g');
    expect(pending.map((row) => row.id)).toEqual(failedIds);
    expect(pending.every((row) => row.consumer === 'stable-1' && row.deliveries === 1)).toBe(true);

    await running.app.close();
    running = undefined;
    state.failing = false;
    state.handled = [];
    running = await startServer(options, [JobsController]);
    await waitFor(() => state.handled.length === failedIds.length, 'failed entries redelivered');
    expect(state.handled.map((h) => h.id)).toEqual(failedIds);
    expect(state.handled.map((h) => h.deliveryCount)).toEqual([2, 2, 2]);
    await waitFor(async () => (await pendingRows(redis.client, 'jobs', 'g')).length === 0, 'redelivered entries acked');
  });

  it('an undecodable entry is logged with stream and id, dead-lettered on its first delivery (decode_error), and later entries still flow', async () => {
    state.failing = false;
    state.handled = [];
    const decodeErrors: RedisStreamsDecodeError[] = [];
    const logged: string[] = [];
    running = await startServer({ connection: redis.server.url, group: 'decode', consumer: 'd1', prefetch: 1, concurrency: 1, prefix: 'dec:' }, [JobsController], [], (server) => {
      server.on('decodeError', (error) => decodeErrors.push(error));
      const logger = (server as unknown as { logger: { error: (message: string) => void } }).logger;
      vi.spyOn(logger, 'error').mockImplementation((message: string) => void logged.push(message));
    });
    const badId = (await redis.client.xadd('dec:jobs', '*', 'pattern', 'jobs', 'data', 'not json {')) as string;
    const noDataId = (await redis.client.xadd('dec:jobs', '*', 'item', 'kettle')) as string;
    const goodIds = [await xaddEvent(redis.client, 'dec:jobs', 'jobs', { mode: 'ok' }), await xaddEvent(redis.client, 'dec:jobs', 'jobs', { mode: 'ok' })];

    // prefetch 1: had the undecodable entries kept their slot, nothing after them would flow.
    await waitFor(() => state.handled.length === 2, 'later entries handled');
    expect(state.handled.map((h) => h.id)).toEqual(goodIds);
    expect(decodeErrors.map((error) => [error.stream, error.entryId])).toEqual([
      ['dec:jobs', badId],
      ['dec:jobs', noDataId],
    ]);
    expect(logged.some((line) => line.includes(badId) && line.includes('"dec:jobs"'))).toBe(true);
    await waitFor(async () => (await pendingRows(redis.client, 'dec:jobs', 'decode')).length === 0, 'nothing pending');
    const dead = (await redis.client.xrange('{dec:jobs}:dead', '-', '+')) as Array<[string, string[]]>;
    const letters = dead.map(([id, flat]) => parseDeadLetter(id, flat)!);
    expect(letters.map((l) => [l.sourceId, l.reason, l.deliveryCount, l.consumer])).toEqual([
      [badId, 'decode_error', 1, 'd1'],
      [noDataId, 'decode_error', 1, 'd1'],
    ]);
    expect(letters[0]!.error).not.toBe('');
    expect({ ...letters[1]!.fields }).toEqual({ item: 'kettle' });
  });
});
