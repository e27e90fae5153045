// Worker child: our RedisStreamsServer with one @EventPattern on the key using the entry lifecycle
// (docs/lifecycle.md), what it costs per entry against the same handler using none of it. Option
// `lifecycle`: `none` (the reference), `keep-results` (extras.keepResults, the payload returned and
// kept), `progress` (one ctx.progress per entry), `progress-100` (100 per entry: one write, the
// coalescing), `timeout` (extras.timeout, a time limit never reached), `signal` (ctx.signal read).
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { RedisStreamsServer, type RedisStreamsContext, type RedisStreamsHandlerExtras, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveWorker } from './harness.js';

/** How long a kept result and its progress stay: the bench's keys expire soon after the run. */
const KEEP_MS = 60_000;
/** A time limit no bench handler reaches. */
const TIMEOUT_MS = 60_000;

await serveWorker(async (probe, config) => {
  const { lifecycle = 'none', ...serverOptions } = (config.options ?? {}) as Record<string, number | boolean | string | undefined>;
  const extras: RedisStreamsHandlerExtras = {
    ...(lifecycle === 'keep-results' ? { keepResults: { ttl: KEEP_MS } } : {}),
    ...(lifecycle === 'timeout' ? { timeout: TIMEOUT_MS } : {}),
  };
  const reports = lifecycle === 'progress' ? 1 : lifecycle === 'progress-100' ? 100 : 0;
  const readsSignal = lifecycle === 'signal';
  if (!['none', 'keep-results', 'progress', 'progress-100', 'timeout', 'signal'].includes(String(lifecycle))) throw new Error(`unknown lifecycle option ${String(lifecycle)}`);

  @Controller()
  class LifecycleController {
    @EventPattern<string>(config.key, extras as Record<string, unknown>)
    onEvent(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext): unknown {
      probe.onMessage(data);
      for (let step = 1; step <= reports; step++) void ctx.progress(step);
      if (readsSignal && ctx.signal.aborted) throw new Error('aborted');
      return data;
    }
  }

  @Module({ controllers: [LifecycleController] })
  class LifecycleModule {}

  const server = new RedisStreamsServer({ connection: config.redisUrl, group: config.group, consumer: 'bench-worker', ...(serverOptions as Partial<RedisStreamsServerOptions>) });
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(LifecycleModule, { strategy: server, logger: ['error', 'warn'] });
  return {
    start: () => app.listen(),
    stop: () => app.close(),
  };
});
