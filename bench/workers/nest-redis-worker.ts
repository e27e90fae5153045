// Worker child: NestJS' built-in Redis (pub/sub) transport with one @EventPattern and one @MessagePattern.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload, Transport, type MicroserviceOptions } from '@nestjs/microservices';
import { serveWorker, workerConfig } from './harness.js';

const config = workerConfig();
const url = new URL(config.redisUrl);

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

  const app = await NestFactory.createMicroservice<MicroserviceOptions>(BenchModule, {
    transport: Transport.REDIS,
    options: { host: url.hostname, port: Number(url.port) },
    logger: ['error', 'warn'],
  });
  return {
    start: () => app.listen(),
    stop: () => app.close(),
  };
});
