// The bench's Nest application, shared by the workers of Nest-based transports: one @EventPattern
// on the key and one @MessagePattern (echo) on `<key>.rpc`, both reporting to the probe.
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, MessagePattern, Payload, type MicroserviceOptions } from '@nestjs/microservices';
import type { WorkerConfig } from '../protocol.js';
import { serveWorker } from './harness.js';

/** Serves a Nest microservice built with `transport(config)` (a `strategy` or a built-in transport). */
export function serveNestWorker(transport: (config: WorkerConfig) => MicroserviceOptions): Promise<void> {
  return serveWorker(async (probe, config) => {
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
      ...transport(config),
      logger: ['error', 'warn'],
    });
    return {
      start: () => app.listen(),
      stop: () => app.close(),
    };
  });
}
