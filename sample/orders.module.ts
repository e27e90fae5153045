import { Inject, Injectable, Module } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsModule, RedisStreamsRecord } from '../src/index.js';
import { ORDERS, ORDERS_CLIENT, QUOTES, type OrderPlaced, type Quote, type QuoteRequest } from './contracts.js';

/** The orders service: asks for a quote (request/reply), then emits the order (an event). */
@Injectable()
export class OrdersService {
  private sequence = 0;

  constructor(@Inject(ORDERS_CLIENT) private readonly client: ClientProxy) {}

  async quote(item: string, quantity: number): Promise<Quote> {
    return lastValueFrom(this.client.send<Quote, QuoteRequest>(QUOTES, { item, quantity }));
  }

  async place(item: string, quantity: number): Promise<{ order: OrderPlaced; entryId: string }> {
    const quote = await this.quote(item, quantity);
    const order: OrderPlaced = { orderId: `order-${++this.sequence}`, item, quantity, total: quote.total };
    const record = new RedisStreamsRecord(order, { headers: { source: 'sample-orders' } });
    const entryId = await lastValueFrom(this.client.emit<string>(ORDERS, record));
    return { order, entryId };
  }
}

@Module({
  imports: [RedisStreamsModule.registerClient({ name: ORDERS_CLIENT, timeout: 5_000 })],
  providers: [OrdersService],
  exports: [OrdersService],
})
export class OrdersModule {}
