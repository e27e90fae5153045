import { Inject, Injectable, Module } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import { lastValueFrom, type Observable } from 'rxjs';
import { RedisStreamsClient, RedisStreamsModule, RedisStreamsRecord, type EntryProgressRecord, type EntryResultRecord, type EntryStatus } from '../src/index.js';
import { ORDERS, ORDERS_CLIENT, QUOTES, REPORTS, type OrderPlaced, type Quote, type QuoteRequest, type ReportRequest } from './contracts.js';

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

/** The orders side of a long job: asks billing for a report, then follows it by its entry id. */
@Injectable()
export class ReportsService {
  constructor(@Inject(ORDERS_CLIENT) private readonly client: RedisStreamsClient) {}

  async request(month: string, pages: number): Promise<string> {
    return lastValueFrom(this.client.emit<string, ReportRequest>(REPORTS, { month, pages }));
  }

  status(entryId: string): Promise<EntryStatus> {
    return this.client.entryStatus(REPORTS, entryId);
  }

  /** Its progress as it is written, completing when the job settles. */
  watch(entryId: string): Observable<EntryProgressRecord> {
    return this.client.watch(REPORTS, entryId);
  }

  /** Its kept result, waiting for it up to `wait`. */
  result(entryId: string, wait: string): Promise<EntryResultRecord | null> {
    return this.client.result(REPORTS, entryId, { wait });
  }
}

@Module({
  imports: [RedisStreamsModule.registerClient({ name: ORDERS_CLIENT, timeout: 5_000 })],
  providers: [OrdersService, ReportsService],
  exports: [OrdersService, ReportsService],
})
export class OrdersModule {}
