/**
 * The sample: three services talking over Redis Streams.
 *   orders  ──send quotes.price──▶  quotes   (request/reply)
 *   orders  ──emit orders───────▶  billing  (consumer group "billing", at-least-once)
 * Then the failure story: a billing worker process crashes mid-order (SIGKILL) and another
 * takes the order over after `minIdleTime`; a poison order is dead-lettered after
 * `maxDeliveries`. The billing worker is a hybrid app (HTTP + the microservice) serving `/health`
 * (terminus). Last, a long job: orders asks billing for a report, follows its progress and state
 * by the entry id, and fetches its kept result. Runs against REDIS_URL, or a private redis-server
 * it starts and stops itself.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { INestApplication, INestApplicationContext, INestMicroservice } from '@nestjs/common';
import { Redis } from 'ioredis';
import { lastValueFrom, tap, timeout } from 'rxjs';
import { DeadLetterService, RedisStreamsServer, type EntryProgressRecord, type RedisStreamsServerOptions } from '../src/index.js';
import { serviceModule } from './app.module.js';
import { BillingModule, Ledger } from './billing.module.js';
import { HealthModule } from './health.module.js';
import { ORDERS, type ReportDone, type ReportProgress } from './contracts.js';
import { OrdersModule, OrdersService, ReportsService } from './orders.module.js';
import { QuotesModule } from './quotes.module.js';
import { ReportsModule } from './reports.module.js';
import { startRedis } from './redis.js';

const ORDER_LINES: Array<[string, number]> = [
  ['kettle', 1],
  ['mug', 4],
  ['teapot', 2],
  ['mug', 12],
  ['kettle', 3],
];
/** Over billing's credit limit: refused on every delivery, so it ends in the dead-letter stream. */
const POISON_LINE: [string, number] = ['mug', 100];
const MIN_IDLE_MS = 1_000;
const MAX_DELIVERIES = 3;
const REPORT_MONTH = '2026-11';
const REPORT_PAGES = 4;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function microservice(
  url: string,
  feature: Parameters<typeof serviceModule>[1],
  group: string,
  consumer: string,
  extra: Partial<RedisStreamsServerOptions> = {},
  setUp: (server: RedisStreamsServer) => void = () => undefined,
): Promise<INestMicroservice> {
  const strategy = new RedisStreamsServer({ connection: url, group, consumer, blockMs: 1_000, ...extra });
  setUp(strategy);
  const app = await NestFactory.createMicroservice(serviceModule(url, feature), { strategy, logger: ['error', 'warn'] });
  await app.listen();
  return app;
}

/** Billing with its health endpoints: one HTTP app that also runs the Redis Streams microservice. */
@Module({ imports: [BillingModule, ReportsModule, HealthModule] })
class BillingWithHealthModule {}

async function hybrid(
  url: string,
  options: RedisStreamsServerOptions,
  setUp: (server: RedisStreamsServer) => void,
): Promise<{ app: INestApplication; baseUrl: string }> {
  const strategy = new RedisStreamsServer({ connection: url, blockMs: 1_000, ...options });
  setUp(strategy);
  const app = await NestFactory.create(serviceModule(url, BillingWithHealthModule), { logger: ['error', 'warn'] });
  app.connectMicroservice({ strategy }, { inheritAppConfig: true });
  await app.startAllMicroservices();
  await app.listen(0, '127.0.0.1');
  return { app, baseUrl: `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}` };
}

async function main(): Promise<void> {
  const redis = await startRedis();
  say(`redis: ${redis.description}`);
  const apps: INestApplicationContext[] = [];
  try {
    const quotes = await microservice(redis.url, QuotesModule, 'quotes', 'quotes-1');
    const orders = await NestFactory.createApplicationContext(serviceModule(redis.url, OrdersModule), { logger: ['error', 'warn'] });
    apps.push(orders, quotes);
    const service = orders.get(OrdersService);

    // 1. A billing worker process takes an order and crashes in the middle of it.
    const doomed = spawn(process.execPath, [fileURLToPath(new URL('./crash-worker.js', import.meta.url)), redis.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    const doomedExit = new Promise<string>((resolve) => doomed.once('exit', (_code, signal) => resolve(String(signal))));
    doomed.stdout.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.startsWith('billing-doomed')) say(line);
    });
    await new Promise<void>((resolve, reject) => {
      doomed.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      doomed.once('exit', () => reject(new Error('the crash worker exited before it was ready')));
    });
    const crashed = await service.place('teapot', 1);
    say(`orders:  emitted ${crashed.order.orderId} as entry ${crashed.entryId}`);
    say(`billing-doomed: process gone (${await doomedExit}); ${crashed.order.orderId} is pending for "billing-doomed", nobody will ack it`);

    // 2. The surviving billing worker recovers it after minIdleTime, and dead-letters the poison order.
    const { app: billing, baseUrl } = await hybrid(
      redis.url,
      {
        group: 'billing',
        consumer: 'billing-1',
        recovery: {
          minIdleTime: MIN_IDLE_MS,
          interval: 250,
          maxDeliveries: MAX_DELIVERIES,
          onDeadLetter: (letter) =>
            say(`billing: dead-lettered entry ${letter.id} to "${letter.deadLetterKey}" after ${letter.deliveryCount} deliveries: ${letter.error}`),
        },
      },
      (server) =>
        server.on('recovered', ({ ids, stream }) => say(`billing: recovery took over ${ids.join(', ')} of "${stream}" (idle over ${MIN_IDLE_MS} ms)`)),
    );
    apps.unshift(billing);

    for (const [item, quantity] of ORDER_LINES) {
      const { order, entryId } = await service.place(item, quantity);
      say(`orders:  quoted ${quantity} × ${item} at ${order.total} and emitted ${order.orderId} as entry ${entryId}`);
    }
    try {
      await service.quote('toaster', 1);
    } catch (error) {
      say(`orders:  quote for an unknown item failed as expected: ${JSON.stringify(error)}`);
    }
    const poison = await service.place(...POISON_LINE);
    say(`orders:  emitted ${poison.order.orderId} (${POISON_LINE[1]} × ${POISON_LINE[0]}) as entry ${poison.entryId}`);

    const ledger = billing.get(Ledger);
    const deadLetters = billing.get(DeadLetterService);
    await until(() => ledger.invoiced.size === ORDER_LINES.length + 1, 15_000, 'billing to invoice every order, the crashed one too');
    await untilAsync(async () => (await deadLetters.size(ORDERS)) === 1, 15_000, 'the poison order to be dead-lettered');
    for (const [orderId, { total, entryId, deliveries }] of ledger.invoiced) {
      say(`billing: invoiced ${orderId} (${total}) from entry ${entryId}, delivery ${deliveries}`);
    }

    const check = new Redis(redis.url);
    try {
      const [pending] = (await check.xpending(ORDERS, 'billing')) as [number, ...unknown[]];
      say(`redis:   stream "${ORDERS}" has ${await check.xlen(ORDERS)} entries, group "billing" has ${pending} pending`);
      if (pending !== 0) throw new Error(`expected no pending entries, found ${pending}`);
      const [letter] = (await deadLetters.list(ORDERS)).deadLetters;
      say(`redis:   dead-letter stream holds ${letter?.sourceId} (reason ${letter?.reason}, ${letter?.deliveryCount} deliveries, last consumer ${letter?.consumer})`);
      const recovered = ledger.invoiced.get(crashed.order.orderId);
      if (recovered === undefined || recovered.deliveries < 2) throw new Error('the crashed order was not recovered');
    } finally {
      check.disconnect();
    }
    for (const path of ['/health/live', '/health']) {
      const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(5_000) });
      const body = (await response.json()) as { status: string; details: Record<string, { status: string }> };
      say(`billing: GET ${path} → ${response.status} ${body.status} (redis-streams: ${body.details['redis-streams']?.status})`);
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`);
    }

    // 3. A long job: billing renders a report page by page; orders follows it by its entry id.
    const reports = orders.get(ReportsService);
    const reportId = await reports.request(REPORT_MONTH, REPORT_PAGES);
    say(`orders:  asked billing for the ${REPORT_MONTH} report (${REPORT_PAGES} pages) as entry ${reportId}`);
    const watched: EntryProgressRecord[] = [];
    const watching = lastValueFrom(reports.watch(reportId).pipe(tap((progress) => watched.push(progress)), timeout(15_000)), { defaultValue: undefined });
    await until(() => watched.length > 0, 15_000, 'the first progress of the report');
    const running = await reports.status(reportId);
    say(`orders:  entry ${reportId} is ${running.state} in group "${running.groups[0]?.group}", reporting progress (delivery ${running.progress?.delivery})`);
    const result = await reports.result(reportId, 'PT15S');
    if (result?.state !== 'done') throw new Error(`expected the report's kept result, got ${JSON.stringify(result)}`);
    const report = result.value as ReportDone;
    say(`orders:  kept result of entry ${reportId}: ${result.state}, ${report.pages} pages in ${report.file} (delivery ${result.delivery})`);
    await watching;
    const last = watched[watched.length - 1]?.value as ReportProgress;
    const settled = await reports.status(reportId);
    say(`orders:  watched its progress up to page ${last.page} of ${last.of}; entry ${reportId} is ${settled.state}`);
    say(`done: every order was quoted, emitted, invoiced and acknowledged; the crashed one on delivery ${ledger.invoiced.get(crashed.order.orderId)?.deliveries}, the poison one dead-lettered; the report followed to its result`);
  } finally {
    for (const app of apps) await app.close();
    await redis.stop();
  }
}

async function untilAsync(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
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
