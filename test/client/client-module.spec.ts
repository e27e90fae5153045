import { Inject, Injectable, Module } from '@nestjs/common';
import { ClientProxy, ClientsModule } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClientModule } from '../../src/client/redis-streams-client.module.js';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { REDIS_STREAMS_CONNECTION } from '../../src/tokens.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

const ORDERS = Symbol('ORDERS');

@Injectable()
class OrdersPublisher {
  constructor(@Inject(ORDERS) readonly client: ClientProxy) {}

  placed(item: string) {
    return lastValueFrom(this.client.emit<string>('orders.placed', { item }));
  }
}

describe('registering RedisStreamsClient in a Nest module', () => {
  const redis = useRedisServer();

  const emitThenClose = async (imports: unknown[], providers: unknown[] = []) => {
    const moduleRef = await Test.createTestingModule({
      imports: imports as never[],
      providers: [OrdersPublisher, ...(providers as never[])],
    }).compile();
    await moduleRef.init();
    const publisher = moduleRef.get(OrdersPublisher);
    expect(publisher.client).toBeInstanceOf(RedisStreamsClient);
    const before = await redis.client.xlen('orders.placed');
    const id = await publisher.placed('kettle');
    expect(id).toMatch(/^\d+-\d+$/);
    expect(await redis.client.xlen('orders.placed')).toBe(before + 1);
    const producer = publisher.client.unwrap<Redis>();
    await moduleRef.close();
    // The application's shutdown closes the client's connection.
    await waitFor(() => producer.status === 'end', 'the client connection to close on shutdown');
  };

  it('through ClientsModule.register with customClass', async () => {
    await emitThenClose([
      ClientsModule.register([{ name: ORDERS, customClass: RedisStreamsClient, options: { connection: redis.server.url } }]),
    ]);
  });

  it('through RedisStreamsClientModule.register', async () => {
    await emitThenClose([RedisStreamsClientModule.register({ name: ORDERS, connection: redis.server.url, trim: { maxLen: 10 } })]);
  });

  it('through RedisStreamsClientModule.registerAsync with injected configuration', async () => {
    const CONFIG = 'CONFIG';
    @Module({ providers: [{ provide: CONFIG, useValue: { url: redis.server.url } }], exports: [CONFIG] })
    class ConfigModule {}
    await emitThenClose([
      RedisStreamsClientModule.registerAsync({
        name: ORDERS,
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: (config: { url: string }) => ({ connection: config.url }),
      }),
    ]);
  });

  it('uses the module connection (REDIS_STREAMS_CONNECTION) when none is given', async () => {
    const shared = redis.server.client();
    @Module({ providers: [{ provide: REDIS_STREAMS_CONNECTION, useValue: shared }], exports: [REDIS_STREAMS_CONNECTION] })
    class SharedConnection {}
    const clientModule = RedisStreamsClientModule.register({ name: ORDERS });
    await emitThenClose([{ ...clientModule, imports: [SharedConnection] }]);
    // The shared connection belongs to its module, not to the client.
    expect(await shared.ping()).toBe('PONG');
    shared.disconnect();
  });
});
