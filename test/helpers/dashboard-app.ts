import { Controller, Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { RedisStreamsDashboardModule, type RedisStreamsDashboardOptions } from '../../src/dashboard/index.js';
import type { Redis } from 'ioredis';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';

/** The stream the test app's handler reads (group `billing`): the dashboard finds it through the server. */
export const HANDLED_STREAM = 'dash-orders';

@Controller()
class OrdersHandler {
  @EventPattern<string>(HANDLED_STREAM)
  onOrder(): void {}
}

/** A partitioned stream a handler reads (opt-in: `startDashboardApp(…, { partitioned: true })`). */
export const PARTITIONED_STREAM = 'dash-parted';

@Controller()
class PartitionedHandler {
  @EventPattern<string>(PARTITIONED_STREAM, { partitions: 2 })
  onEntry(): void {}
}

/** Nest's log lines, kept for assertions (the dashboard logs its actions through Logger). */
export class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(String(message));
  }
  error(message: unknown): void {
    this.lines.push(String(message));
  }
  warn(message: unknown): void {
    this.lines.push(String(message));
  }
}

export interface DashboardApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** The page's URL. */
  readonly page: string;
  readonly logger: CapturingLogger;
  close(): Promise<void>;
}

export interface DashboardAppOptions {
  /** A second handler reads PARTITIONED_STREAM's two partitions. */
  partitioned?: boolean;
  /** `app.enableCors({ origin: true, credentials: true })`: every origin may read the app's answers. */
  cors?: boolean;
  /** `app.setGlobalPrefix(prefix)`. */
  prefix?: string;
  /** The loopback address the app listens on (default 127.0.0.1). */
  host?: string;
  /** The port (default: a free one). */
  port?: number;
  /** The module's connection (the dashboard's), e.g. with a `commandTimeout` (default: `url`). */
  connection?: RedisConnection;
  /** Whether a RedisStreamsServer reads HANDLED_STREAM (default true; it needs Redis up at the start). */
  worker?: boolean;
}

/**
 * A Nest HTTP app on a free loopback port with RedisStreamsModule (connection `url`, or the
 * `connection` option), the dashboard at `/streams` and (unless `worker: false`) a
 * RedisStreamsServer on `url` whose handler reads HANDLED_STREAM (and, with `partitioned`, another
 * one reads PARTITIONED_STREAM's two partitions).
 */
export async function startDashboardApp(
  url: string,
  dashboard: RedisStreamsDashboardOptions = {},
  adapter: 'express' | 'fastify' = 'express',
  { partitioned = false, cors = false, prefix, host = '127.0.0.1', port = 0, connection = url, worker = true }: DashboardAppOptions = {},
): Promise<DashboardApp> {
  const controllers = partitioned ? [OrdersHandler, PartitionedHandler] : [OrdersHandler];
  @Module({ imports: [RedisStreamsModule.forRoot({ connection }), RedisStreamsDashboardModule.forRoot(dashboard)], controllers: worker ? controllers : [] })
  class AppModule {}

  const logger = new CapturingLogger();
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  // Chromium keeps (and pre-opens) sockets that close() would wait for until the server's headersTimeout.
  const options = { logger, forceCloseConnections: true };
  const app = adapter === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), options) : moduleRef.createNestApplication(options);
  if (worker) {
    const strategy = new RedisStreamsServer({ connection: url, group: 'billing', consumer: 'billing-1', blockMs: 200 });
    app.connectMicroservice({ strategy }, { inheritAppConfig: true });
  }
  if (cors) app.enableCors({ origin: true, credentials: true });
  if (prefix !== undefined) app.setGlobalPrefix(prefix);
  await app.startAllMicroservices();
  await app.listen(port, host);
  const origin = `http://${host}:${(app.getHttpServer().address() as AddressInfo).port}`;
  const mount = `${prefix === undefined ? '' : `/${prefix}`}${dashboard.path ?? '/streams'}`;
  return { app, origin, page: `${origin}${mount}`, logger, close: () => app.close() };
}

/** A group nobody handles: entries read into it stay pending, for the page to show. */
export const AUDIT_GROUP = 'audit';

/**
 * `stream` with `entries` entries (`data` `{"n":…}`, and `field` = `value-n`), group `audit` holding `pending + deadLetters` of them (consumer
 * `audit-1`), of which `deadLetters` are moved to the stream's dead-letter stream
 * (`{stream}:dead`, reason `manual`). Returns the dead letters' ids.
 */
export async function seedStream(
  redis: Redis,
  stream: string,
  { entries, pending, deadLetters, field = 'note', value = 'hello' }: { entries: number; pending: number; deadLetters: number; field?: string; value?: string },
): Promise<string[]> {
  const pipeline = redis.pipeline();
  // The wire format (pattern + JSON data) so that a handler of the stream decodes them; `field` rides along.
  for (let n = 0; n < entries; n++) pipeline.xadd(stream, '*', 'pattern', stream, 'data', JSON.stringify({ n }), field, `${value}-${n}`);
  await pipeline.exec();
  await redis.xgroup('CREATE', stream, AUDIT_GROUP, '0');
  const taken = pending + deadLetters;
  if (taken === 0) return [];
  const reply = (await redis.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', taken, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
  const ids = reply[0]![1].map(([id]) => id);
  const moved = await new DeadLetterService(redis).moveToDeadLetter({ stream, group: AUDIT_GROUP, ids: ids.slice(0, deadLetters), reason: 'manual', error: 'boom' });
  return moved.outcomes.map((outcome) => outcome.deadLetterId as string);
}
