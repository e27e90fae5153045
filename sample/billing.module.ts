import { Controller, Injectable, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload, RpcException } from '@nestjs/microservices';
import { RedisStreamsContext } from '../src/index.js';
import { ORDERS, type OrderPlaced } from './contracts.js';

/** What billing has done, so the sample can wait for it and print it. */
@Injectable()
export class Ledger {
  readonly invoiced = new Map<string, { total: number; entryId: string; deliveries: number }>();
}

/** Orders above this quantity are refused every time: the sample's poison message. */
export const CREDIT_LIMIT = 99;

/** The billing worker: consumes `orders` in the `billing` group; acked only when this returns. */
@Controller()
export class BillingController {
  constructor(private readonly ledger: Ledger) {}

  @EventPattern<string>(ORDERS)
  async invoice(@Payload() order: OrderPlaced, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    if (order.quantity > CREDIT_LIMIT) {
      process.stdout.write(`billing: ${order.orderId} refused (delivery ${ctx.getDeliveryCount()}): quantity over the credit limit\n`);
      throw new RpcException(`quantity ${order.quantity} is over the credit limit of ${CREDIT_LIMIT}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5)); // the "work"
    this.ledger.invoiced.set(order.orderId, {
      total: order.total,
      entryId: ctx.getId(),
      deliveries: ctx.getDeliveryCount(),
    });
  }
}

@Module({ controllers: [BillingController], providers: [Ledger], exports: [Ledger] })
export class BillingModule {}
