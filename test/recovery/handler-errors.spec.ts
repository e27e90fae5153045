import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import { startServer, type RunningServer } from '../fixtures/server-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

class PriceMissingError extends Error {}

@Controller()
class FailingController {
  @EventPattern<string>('priced', { minIdleTime: 100, maxDeliveries: 1 })
  onPriced(_data: unknown): void {
    throw new PriceMissingError('order 7 has no price');
  }

  @EventPattern<string>('retried', { minIdleTime: 5_000, maxDeliveries: 2, retry: { type: 'fixed', delay: 50 } })
  onRetried(_data: unknown): void {
    throw new TypeError('retried and still failing');
  }

  @MessagePattern<string>('quote', { minIdleTime: 100, maxDeliveries: 1, ackMode: 'manual' })
  quote(_data: unknown): number {
    throw new RangeError('quantity 1000 is too big');
  }
}

let boomCalls = 0;

@Controller()
class BoomController {
  @EventPattern<string>('boomed', { minIdleTime: 100, maxDeliveries: 1 })
  onBoomed(_data: unknown): void {
    boomCalls++;
    throw new TypeError('boom');
  }
}

/** Dead letters carry the handler's own error (class and message), not Nest's "Internal server error". */
describe('handler errors in dead letters (real redis-server)', () => {
  const redis = useRedisServer();
  let running: RunningServer | undefined;
  const letters: DeadLetterNotice[] = [];
  afterEach(async () => {
    await running?.app.close();
    running = undefined;
    letters.length = 0;
  });

  async function worker(): Promise<void> {
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'w', blockMs: 100 }, [FailingController], [], (server) =>
      server.on('deadLetter', (letter) => letters.push(letter)),
    );
  }

  it('an event handler throwing a plain Error subclass: its class and message', async () => {
    await worker();
    const id = await redis.client.xadd('priced', '*', 'pattern', 'priced', 'data', '{}');
    await waitFor(() => letters.length === 1, 'dead letter');
    expect(letters[0]).toMatchObject({ stream: 'priced', id, reason: 'max_deliveries', error: 'PriceMissingError: order 7 has no price' });
  });

  it('dead-lettered by another worker (no retry policy, nothing shared in memory): the error travels in its error record', async () => {
    boomCalls = 0;
    // Worker A runs the handler once and closes without recovery; the entry stays pending under "a".
    const first = await startServer({ connection: redis.server.url, group: 'g', consumer: 'a', blockMs: 100, recovery: { enabled: false } }, [BoomController]);
    const id = (await redis.client.xadd('boomed', '*', 'pattern', 'boomed', 'data', '{}')) as string;
    const key = `{boomed}:error:g:${id}`;
    try {
      await waitFor(() => boomCalls === 1, 'the handler failed once');
    } finally {
      await first.app.close();
    }
    expect(await redis.client.get(key)).toBe('TypeError: boom');
    const ttl = await redis.client.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(100 + 3_600_000);

    // Worker B, a separate server instance, dead-letters it (delivered maxDeliveries times).
    running = await startServer({ connection: redis.server.url, group: 'g', consumer: 'b', blockMs: 100 }, [BoomController], [], (server) =>
      server.on('deadLetter', (letter) => letters.push(letter)),
    );
    await waitFor(() => letters.length === 1, 'dead letter written by worker B');
    expect(letters[0]).toMatchObject({ stream: 'boomed', id, reason: 'max_deliveries', consumer: 'a', error: 'TypeError: boom' });
    const [[, fields]] = (await redis.client.xrange('{boomed}:dead', '-', '+')) as [[string, string[]]];
    expect(fields[fields.indexOf('dlq:error') + 1]).toBe('TypeError: boom');
    expect(boomCalls).toBe(1);
    expect(await redis.client.exists(key)).toBe(0);
  });

  it('under a retry policy (the error travels through Redis with the entry): its class and message too', async () => {
    await worker();
    const id = await redis.client.xadd('retried', '*', 'pattern', 'retried', 'data', '{}');
    await waitFor(() => letters.length === 1, 'dead letter after the retry');
    expect(letters[0]).toMatchObject({ stream: 'retried', id, reason: 'max_deliveries', deliveryCount: 2, error: 'TypeError: retried and still failing' });
  });

  it('a request handler that failed (manual ack: it stays pending): the requester gets what Nest made of it, the dead letter the handler\'s own error', async () => {
    await worker();
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      await expect(lastValueFrom(client.send('quote', { quantity: 1000 }))).rejects.toEqual({ status: 'error', message: 'Internal server error' });
      await waitFor(() => letters.length === 1, 'dead letter');
      expect(letters[0]).toMatchObject({ stream: 'quote', reason: 'max_deliveries', error: 'RangeError: quantity 1000 is too big' });
    } finally {
      await client.close();
    }
  });
});
