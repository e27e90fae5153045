// Worker child: our RedisStreamsServer with a batch handler (extras.batch, size 100): Nest's
// handler pipeline runs once per batch; the probe still counts every payload.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveWorker } from './harness.js';

/** The batch size of the bench's batch contender (docs/benchmarks.md). */
const BATCH_SIZE = 100;

await serveWorker(async (probe, config) => {
  @Controller()
  class BenchBatchController {
    @EventPattern<string>(config.key, { batch: { size: BATCH_SIZE, waitMs: 20 } })
    onEvents(@Payload() payloads: unknown[]): void {
      for (const payload of payloads) probe.onMessage(payload);
    }
  }

  @Module({ controllers: [BenchBatchController] })
  class BenchModule {}

  // `otel` and `batch`: streams-otel-worker's, when it runs this worker with an SDK registered.
  // `leases: false` (flat): no lease renewal at all (the read/handle/ack path alone).
  const { otel: _otel, batch: _batch, leases, ...rest } = config.options ?? {};
  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(rest as Partial<RedisStreamsServerOptions>),
    ...(leases === false ? { recovery: { leases: false } } : {}),
  };
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(BenchModule, {
    strategy: new RedisStreamsServer(options),
    logger: ['error', 'warn'],
  });
  return {
    start: () => app.listen(),
    stop: () => app.close(),
  };
});
