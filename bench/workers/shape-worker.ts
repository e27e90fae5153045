// Worker child: our RedisStreamsServer reading `streams` streams (`<key>:0` … ) in `groups` groups,
// one @EventPattern per stream and group, each reporting to the probe (after `delayMs`, if given).
// The other options go to the server as they are (prefetch, maxPrefetchBytes, ...).
import 'reflect-metadata';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, type MicroserviceOptions } from '@nestjs/microservices';
import { RedisStreamsServer, type RedisStreamsServerOptions } from '../../src/index.js';
import { shapeKeys } from '../shape.js';
import { serveWorker } from './harness.js';

await serveWorker(async (probe, config) => {
  const { streams = 1, groups = 1, delayMs = 0, ...serverOptions } = (config.options ?? {}) as Record<string, number>;
  class ShapeController {}
  const prototype = ShapeController.prototype as unknown as Record<string, unknown>;
  for (const [s, key] of shapeKeys(config.key, streams).entries()) {
    for (let g = 0; g < groups; g++) {
      const name = `on_${s}_${g}`;
      prototype[name] = delayMs > 0
        ? (data: unknown) => new Promise<void>((resolve) => setTimeout(() => resolve(probe.onMessage(data)), delayMs))
        : (data: unknown) => probe.onMessage(data);
      const descriptor = Object.getOwnPropertyDescriptor(prototype, name) as PropertyDescriptor;
      EventPattern<string>(key, { group: `${config.group}-${g}` })(prototype, name, descriptor);
    }
  }
  Controller()(ShapeController);

  @Module({ controllers: [ShapeController] })
  class ShapeModule {}

  const options: RedisStreamsServerOptions = { connection: config.redisUrl, group: config.group, consumer: 'bench-worker', ...serverOptions };
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(ShapeModule, {
    strategy: new RedisStreamsServer(options),
    logger: ['error', 'warn'],
  });
  return { start: () => app.listen(), stop: () => app.close() };
});
