import { Controller, Inject, Injectable, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload, type AsyncMicroserviceOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import type { RedisStreamsModuleOptions } from '../../src/module/redis-streams-module.options.js';
import { RedisStreamsServerFactory } from '../../src/module/redis-streams-server.factory.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../../src/tokens.js';
import type { RedisClient } from '../../src/redis/connection.js';
import { RedisStreamsServer } from '../../src/server/redis-streams.server.js';
import { pendingCount } from '../helpers/stream-state.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

async function moduleClients(redis: Redis): Promise<string[]> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .map((line) => /name=(\S*)/.exec(line)?.[1] ?? '')
    .filter((name) => name.startsWith('nestjs-redis-streams:'));
}

const received: unknown[] = [];

@Controller()
class DiEventsController {
  @EventPattern<string>('di-events')
  onEvent(@Payload() data: unknown): void {
    received.push(data);
  }
}

@Injectable()
class UsesConnection {
  constructor(@Inject(REDIS_STREAMS_CONNECTION) readonly redis: RedisClient) {}
}

@Module({ providers: [UsesConnection], exports: [UsesConnection] })
class FeatureModule {}

describe('RedisStreamsModule', () => {
  const redis = useRedisServer();

  it('forRoot provides the options and a working connection, closed with the module', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedisStreamsModule.forRoot({ connection: redis.server.url, server: { group: 'g' } })],
    }).compile();
    const connection = moduleRef.get<RedisClient>(REDIS_STREAMS_CONNECTION);
    expect(await connection.ping()).toBe('PONG');
    expect(moduleRef.get<RedisStreamsModuleOptions>(REDIS_STREAMS_MODULE_OPTIONS)).toEqual({ connection: redis.server.url, server: { group: 'g' } });
    expect(await moduleClients(redis.client)).toContain('nestjs-redis-streams:module');
    await moduleRef.close();
    await waitFor(() => connection.status === 'end', 'module connection ended');
    expect(await moduleClients(redis.client)).toEqual([]);
  });

  it('forRootAsync with ConfigService provides a working connection; isGlobal makes it injectable everywhere', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => ({ REDIS_URL: redis.server.url })] }),
        RedisStreamsModule.forRootAsync({
          isGlobal: true,
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({ connection: config.getOrThrow<string>('REDIS_URL') }),
        }),
        FeatureModule,
      ],
    }).compile();
    try {
      const connection = moduleRef.get<RedisClient>(REDIS_STREAMS_CONNECTION);
      await connection.set('module:probe', 'yes');
      expect(await redis.client.get('module:probe')).toBe('yes');
      // FeatureModule does not import RedisStreamsModule: only a global module reaches it.
      expect(moduleRef.get(UsesConnection).redis).toBe(connection);
    } finally {
      await moduleRef.close();
    }
  });

  it('a server built from DI (RedisStreamsServerFactory) consumes events over the module connection', async () => {
    @Module({
      imports: [RedisStreamsModule.forRoot({ connection: redis.server.url, server: { group: 'di-group' } })],
      controllers: [DiEventsController],
    })
    class AppModule {}

    const app = await NestFactory.createMicroservice<AsyncMicroserviceOptions>(AppModule, {
      logger: false,
      inject: [RedisStreamsServerFactory],
      useFactory: (factory: RedisStreamsServerFactory) => ({ strategy: factory.create({ consumer: 'di-consumer' }) }),
    });
    await app.listen();
    try {
      expect(app.getTransportServer()).toBeInstanceOf(RedisStreamsServer);
      await redis.client.xadd('di-events', '*', 'pattern', 'di-events', 'data', JSON.stringify({ hello: 'di' }));
      await waitFor(() => received.length === 1, 'event through the DI-built server');
      expect(received).toEqual([{ hello: 'di' }]);
      await waitFor(async () => (await pendingCount(redis.client, 'di-events', 'di-group')) === 0, 'acked');
      const consumers = (await redis.client.xinfo('CONSUMERS', 'di-events', 'di-group')) as unknown[][];
      expect(consumers.map((row) => row[1])).toEqual(['di-consumer']);
    } finally {
      await app.close();
    }
    expect(await moduleClients(redis.client)).toEqual([]);
  });
});
