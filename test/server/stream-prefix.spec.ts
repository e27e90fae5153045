import { Controller, Logger } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsOptionError } from '../../src/errors.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { startServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const received: unknown[] = [];

@Controller()
class ShopController {
  @EventPattern('orders')
  onOrder(@Payload() data: unknown): void {
    received.push(data);
  }
}

/** One name for the stream prefix on both sides: `streamPrefix`; the server's old `prefix` is a deprecated alias. */
describe('streamPrefix on the server and the client (real redis-server)', () => {
  const redis = useRedisServer();
  afterEach(() => {
    received.length = 0;
    vi.restoreAllMocks();
  });

  it('a server and a client both given streamPrefix meet on the same stream', async () => {
    const { app } = await startServer({ connection: redis.server.url, group: 'g', streamPrefix: 'shop:', blockMs: 100 }, [ShopController]);
    const client = new RedisStreamsClient({ connection: redis.server.url, streamPrefix: 'shop:' });
    try {
      await lastValueFrom(client.emit('orders', { n: 1 }));
      await waitFor(() => received.length === 1, 'event on shop:orders');
      expect(received).toEqual([{ n: 1 }]);
      expect(await redis.client.xlen('shop:orders')).toBe(1);
      expect(await redis.client.exists('orders')).toBe(0);
    } finally {
      await client.close();
      await app.close();
    }
  });

  it('the old server option prefix still works, with one deprecation warning per process', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const { app, server } = await startServer({ connection: redis.server.url, group: 'g', prefix: 'old:', blockMs: 100 }, [ShopController]);
    try {
      expect(server.recoveryHost().handledStreams().map((handled) => handled.stream)).toEqual(['old:orders']);
      // Spec files share a worker's modules (vitest.config.ts `isolate: false`): another file may
      // have warned in this process already, so the count is taken on a fresh copy of the package.
      warn.mockClear();
      vi.resetModules();
      const fresh = await import('../../src/server/redis-streams.server.js');
      new fresh.RedisStreamsServer({ group: 'g', prefix: 'old:' });
      new fresh.RedisStreamsServer({ group: 'g', prefix: 'old:' });
      new fresh.RedisStreamsServer({ group: 'g', prefix: 'old:', streamPrefix: 'old:' }); // both, same value: accepted
      const deprecations = warn.mock.calls.filter(([message]) => String(message).includes('prefix is deprecated'));
      expect(deprecations).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('prefix and streamPrefix with different values: an option error naming prefix', () => {
    let error: unknown;
    try {
      new RedisStreamsServer({ group: 'g', prefix: 'a:', streamPrefix: 'b:' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RedisStreamsOptionError);
    expect(error).toMatchObject({ option: 'prefix' });
    expect(() => new RedisStreamsServer({ group: 'g', streamPrefix: 3 as unknown as string })).toThrow(
      expect.objectContaining({ option: 'streamPrefix' }) as Error,
    );
  });
});
