/**
 * A billing worker that crashes mid-order: it joins group "billing", takes the next order, says
 * so, and dies with SIGKILL before finishing (no ack, no graceful handoff) — a real crash. The
 * entry stays pending under its consumer name until recovery in another worker takes it over.
 * Run by sample/main.ts as a child process: `node build/sample/crash-worker.js <redis-url>`.
 */
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext, RedisStreamsServer } from '../src/index.js';
import { ORDERS, type OrderPlaced } from './contracts.js';

@Controller()
class DoomedBillingController {
  @EventPattern<string>(ORDERS)
  async invoice(@Payload() order: OrderPlaced, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    process.stdout.write(`billing-doomed: started ${order.orderId} (entry ${ctx.getId()}) ... and crashes (SIGKILL)\n`);
    process.kill(process.pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 60_000));
  }
}

@Module({ controllers: [DoomedBillingController] })
class DoomedBillingModule {}

async function main(): Promise<void> {
  const url = process.argv[2] as string;
  const strategy = new RedisStreamsServer({ connection: url, group: 'billing', consumer: 'billing-doomed', prefetch: 1, concurrency: 1, blockMs: 500 });
  const app = await NestFactory.createMicroservice(DoomedBillingModule, { strategy, logger: ['error'] });
  await app.listen();
  process.stdout.write('ready\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`crash worker failed: ${String(error)}\n`);
  process.exit(1);
});
