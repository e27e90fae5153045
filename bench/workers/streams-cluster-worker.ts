// Worker child: our RedisStreamsServer on a Redis Cluster (options.nodes: node URLs, comma
// separated), one @EventPattern on the key, spread over options.partitions partitions when > 1.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import { RedisStreamsServer } from '../../src/index.js';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const partitions = Number(config.options?.partitions ?? 1);
  const nodes = String(config.options?.nodes ?? config.redisUrl).split(',');

  @Controller()
  class BenchClusterController {
    @EventPattern<string>(config.key, partitions > 1 ? { partitions } : {})
    onEvent(@Payload() data: unknown): void {
      probe.onMessage(data);
    }
  }

  @Module({ controllers: [BenchClusterController] })
  class BenchModule {}

  const app = await NestFactory.createMicroservice<MicroserviceOptions>(BenchModule, {
    strategy: new RedisStreamsServer({ connection: { cluster: { nodes } }, group: config.group, consumer: 'bench-worker' }),
    logger: ['error', 'warn'],
  });
  return {
    start: () => app.listen(),
    stop: () => app.close(),
  };
});
