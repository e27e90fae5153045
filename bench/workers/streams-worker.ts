// Worker child: our RedisStreamsServer with one @EventPattern and one @MessagePattern on the key.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { serveWorker, workerConfig } from './harness.js';

const config = workerConfig();

await serveWorker(async (probe) => {
  @Controller()
  class BenchController {
    @EventPattern<string>(config.key)
    onEvent(@Payload() data: unknown): void {
      probe.onMessage(data);
    }

    @MessagePattern(`${config.key}.rpc`)
    onRequest(@Payload() data: unknown): unknown {
      probe.onMessage(data);
      return data;
    }
  }

  @Module({ controllers: [BenchController] })
  class BenchModule {}

  const options: RedisStreamsServerOptions = {
    connection: config.redisUrl,
    group: config.group,
    consumer: 'bench-worker',
    ...(config.options as Partial<RedisStreamsServerOptions> | undefined),
  };
  const app = await NestFactory.createMicroservice(BenchModule, {
    strategy: new RedisStreamsServer(options),
    logger: ['error', 'warn'],
  });
  return {
    start: () => app.listen(),
    stop: () => app.close(),
  };
});
