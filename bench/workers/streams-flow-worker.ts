// Worker child: our RedisStreamsServer with one @EventPattern on the key, under the flow controls
// the options name (flow-* scenarios). Options: `rateLimitMax` + `rateLimitPer` (extras.rateLimit),
// `globalConcurrency`, `delayMs` (the handler's time after it started), `trackStarts` (keep handler
// start times for `call('starts')`), `consumer`; the rest go to the server as they are (blockMs...).
// Operations (`WorkerProcess.call`): `pause` / `resume` [pattern] through this server, `mark`, `starts`,
// `lag` (the event loop's longest delay since the last `lag`).
import 'reflect-metadata';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, type MicroserviceOptions } from '@nestjs/microservices';
import { RedisStreamsServer, type RedisStreamsHandlerExtras, type RedisStreamsServerOptions } from '../../src/index.js';
import { nowNs } from '../clock.js';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const { rateLimitMax, rateLimitPer, globalConcurrency, delayMs = 0, trackStarts = false, consumer, ...serverOptions } = (config.options ?? {}) as Record<string, number | boolean | string | undefined>;
  const extras: RedisStreamsHandlerExtras = {
    ...(rateLimitMax === undefined ? {} : { rateLimit: { max: Number(rateLimitMax), per: Number(rateLimitPer ?? 1000) } }),
    ...(globalConcurrency === undefined ? {} : { globalConcurrency: Number(globalConcurrency) }),
  };
  // Start times only when asked: a clock read per entry would tax the flow-cost contenders.
  let lastStartAt = 0;
  let markAt = 0;
  let firstAfterMark = 0;
  const started = trackStarts
    ? (data: unknown) => {
        const at = nowNs();
        lastStartAt = at;
        if (firstAfterMark === 0 && markAt > 0) firstAfterMark = at;
        probe.onMessage(data);
      }
    : (data: unknown) => probe.onMessage(data);
  const handle = Number(delayMs) > 0
    ? (data: unknown) => {
        started(data);
        return new Promise<void>((resolve) => setTimeout(resolve, Number(delayMs)));
      }
    : started;

  class FlowController {
    onEvent(data: unknown): unknown {
      return handle(data);
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(FlowController.prototype, 'onEvent') as PropertyDescriptor;
  EventPattern<string>(config.key, extras as Record<string, unknown>)(FlowController.prototype, 'onEvent', descriptor);
  Controller()(FlowController);

  @Module({ controllers: [FlowController] })
  class FlowModule {}

  const server = new RedisStreamsServer({
    connection: config.redisUrl,
    group: config.group,
    // Several workers of one group (flow-rate) need names of their own.
    consumer: typeof consumer === 'string' ? consumer : `bench-worker-${process.pid}`,
    ...(serverOptions as Partial<RedisStreamsServerOptions>),
  });
  // A slow pause on a busy host: was this process kept off the CPU (a stalled loop) at the time?
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(FlowModule, { strategy: server, logger: ['error', 'warn'] });
  return {
    start: () => app.listen(),
    stop: async () => {
      loopDelay.disable();
      await app.close();
    },
    call: async (op, arg): Promise<Record<string, number>> => {
      switch (op) {
        case 'pause':
        case 'resume': {
          // The clock read just before the call: what the parent measures from.
          const at = nowNs();
          const changed = op === 'pause' ? await server.pause(arg ?? config.key) : await server.resume(arg ?? config.key);
          return { at, doneAt: nowNs(), changed: changed ? 1 : 0 };
        }
        case 'mark':
          // From here, the next handler start is kept (`firstAfterMark`): the start after a resume.
          markAt = nowNs();
          firstAfterMark = 0;
          return { at: markAt, lastStartAt, count: probe.count };
        case 'starts':
          return { at: nowNs(), lastStartAt, firstAfterMark, count: probe.count };
        case 'lag': {
          const maxMs = loopDelay.max / 1e6;
          loopDelay.reset();
          return { maxMs };
        }
        default:
          throw new Error(`unknown operation ${op}`);
      }
    },
  };
});
