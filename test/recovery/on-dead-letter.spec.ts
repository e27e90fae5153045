import { Controller, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, type AsyncMicroserviceOptions } from '@nestjs/microservices';
import { describe, expect, it } from 'vitest';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { RedisStreamsServerFactory } from '../../src/module/redis-streams-server.factory.js';
import { deadLetterListeners } from '../../src/recovery/dead-letter-listeners.js';
import { OnDeadLetter } from '../../src/recovery/on-dead-letter.decorator.js';
import type { DeadLetterNotice } from '../../src/recovery/recovery-events.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

@Controller()
class ShopController {
  @EventPattern('orders')
  onOrder(_data: unknown): void {}

  @EventPattern('payments')
  onPayment(_data: unknown): void {}
}

/** A plain provider: its decorated methods are found by RedisStreamsModule, nothing else wires them. */
@Injectable()
class DeadLetterAlerts {
  readonly all: DeadLetterNotice[] = [];
  readonly orders: DeadLetterNotice[] = [];
  readonly refunds: DeadLetterNotice[] = [];

  @OnDeadLetter()
  onAny(letter: DeadLetterNotice): void {
    this.all.push(letter);
  }

  @OnDeadLetter('orders')
  async onOrder(letter: DeadLetterNotice): Promise<void> {
    this.orders.push(letter);
  }

  @OnDeadLetter('refunds')
  onRefund(letter: DeadLetterNotice): void {
    this.refunds.push(letter);
  }

  @OnDeadLetter('payments')
  broken(): void {
    throw new Error('a listener that throws is logged, the others still run');
  }
}

describe('@OnDeadLetter(pattern?) on a provider (real Nest app, real redis-server)', () => {
  const redis = useRedisServer();

  it('is called with each dead letter of the app\'s servers, filtered by pattern; removed when the app closes', async () => {
    @Module({
      imports: [RedisStreamsModule.forRoot({ connection: redis.server.url })],
      controllers: [ShopController],
      providers: [DeadLetterAlerts],
    })
    class AppModule {}
    const app = await NestFactory.createMicroservice<AsyncMicroserviceOptions>(AppModule, {
      logger: false,
      inject: [RedisStreamsServerFactory],
      useFactory: (factory: RedisStreamsServerFactory) => ({ strategy: factory.create({ group: 'g', consumer: 'c', blockMs: 100 }) }),
    });
    await app.listen();
    const alerts = app.get(DeadLetterAlerts);
    try {
      // Entries without a "data" field cannot be decoded: dead-lettered at once (reason decode_error).
      const order = await redis.client.xadd('orders', '*', 'pattern', 'orders', 'junk', '1');
      const payment = await redis.client.xadd('payments', '*', 'pattern', 'payments', 'junk', '2');
      await waitFor(() => alerts.all.length === 2, 'both dead letters');
      expect(alerts.all.map((letter) => [letter.stream, letter.id, letter.reason]).sort()).toEqual([
        ['orders', order, 'decode_error'],
        ['payments', payment, 'decode_error'],
      ]);
      await waitFor(() => alerts.orders.length === 1, 'the orders listener');
      expect(alerts.orders.map((letter) => letter.id)).toEqual([order]);
      expect(alerts.refunds).toEqual([]);
      expect(deadLetterListeners.size).toBe(4);
    } finally {
      await app.close();
    }
    expect(deadLetterListeners.size).toBe(0);
  });
});
