import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../src/client/redis-streams-client.js';
import type { DeadLetterNotice } from '../src/recovery/recovery-events.js';
import { startServer, type RunningServer } from './fixtures/server-app.js';
import { useRedisServer } from './helpers/use-redis-server.js';
import { waitFor } from './helpers/wait.js';

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
