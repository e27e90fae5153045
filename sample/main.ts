/**
 * The sample: three services talking over Redis Streams.
 *   orders  ──send quotes.price──▶  quotes   (request/reply)
 *   orders  ──emit orders───────▶  billing  (consumer group "billing", at-least-once)
 * Runs against REDIS_URL, or a private redis-server it starts and stops itself.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext, INestMicroservice } from '@nestjs/common';
import { Redis } from 'ioredis';
import { RedisStreamsServer } from '../src/index.js';
import { serviceModule } from './app.module.js';
import { BillingModule, Ledger } from './billing.module.js';
import { ORDERS } from './contracts.js';
import { OrdersModule, OrdersService } from './orders.module.js';
import { QuotesModule } from './quotes.module.js';
import { startRedis } from './redis.js';

const ORDER_LINES: Array<[string, number]> = [
  ['kettle', 1],
  ['mug', 4],
  ['teapot', 2],
  ['mug', 12],
  ['kettle', 3],
];

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function microservice(url: string, feature: Parameters<typeof serviceModule>[1], group: string, consumer: string): Promise<INestMicroservice> {
  const strategy = new RedisStreamsServer({ connection: url, group, consumer, blockMs: 1_000 });
  const app = await NestFactory.createMicroservice(serviceModule(url, feature), { strategy, logger: ['error', 'warn'] });
  await app.listen();
  return app;
}

async function main(): Promise<void> {
  const redis = await startRedis();
  say(`redis: ${redis.description}`);
  const apps: INestApplicationContext[] = [];
  try {
    const quotes = await microservice(redis.url, QuotesModule, 'quotes', 'quotes-1');
    const billing = await microservice(redis.url, BillingModule, 'billing', 'billing-1');
    const orders = await NestFactory.createApplicationContext(serviceModule(redis.url, OrdersModule), { logger: ['error', 'warn'] });
    apps.push(orders, billing, quotes);

    const service = orders.get(OrdersService);
    for (const [item, quantity] of ORDER_LINES) {
      const { order, entryId } = await service.place(item, quantity);
      say(`orders:  quoted ${quantity} × ${item} at ${order.total} and emitted ${order.orderId} as entry ${entryId}`);
    }
    try {
      await service.quote('toaster', 1);
    } catch (error) {
      say(`orders:  quote for an unknown item failed as expected: ${JSON.stringify(error)}`);
    }

    const ledger = billing.get(Ledger);
    await until(() => ledger.invoiced.size === ORDER_LINES.length, 10_000, 'billing to invoice every order');
    for (const [orderId, { total, entryId, deliveries }] of ledger.invoiced) {
      say(`billing: invoiced ${orderId} (${total}) from entry ${entryId}, delivery ${deliveries}`);
    }

    const check = new Redis(redis.url);
    try {
      const [pending] = (await check.xpending(ORDERS, 'billing')) as [number, ...unknown[]];
      say(`redis:   stream "${ORDERS}" has ${await check.xlen(ORDERS)} entries, group "billing" has ${pending} pending`);
      if (pending !== 0) throw new Error(`expected no pending entries, found ${pending}`);
    } finally {
      check.disconnect();
    }
    say('done: every order was quoted, emitted, invoiced and acknowledged');
  } finally {
    for (const app of apps) await app.close();
    await redis.stop();
  }
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    new Logger('sample').error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(1);
  },
);
