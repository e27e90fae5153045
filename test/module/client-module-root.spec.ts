import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ClientProxy } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStreamsModule } from '../../src/module/redis-streams.module.js';
import { RedisServerProcess } from '../helpers/redis-server.js';

const ORDERS = 'ORDERS';

@Injectable()
class OrdersService {
  constructor(@Inject(ORDERS) readonly client: ClientProxy) {}
}

describe('RedisStreamsModule.registerClient next to a non-global forRoot (the README shape)', () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  for (const [n, order] of (['forRoot first', 'registerClient first'] as const).entries()) {
    it(`the client uses forRoot's connection (${order})`, async () => {
      const root = RedisStreamsModule.forRoot({ connection: server.url });
      const client = RedisStreamsModule.registerClient({ name: ORDERS });
      @Module({ imports: order === 'forRoot first' ? [root, client] : [client, root], providers: [OrdersService] })
      class OrdersModule {}
      const moduleRef = await Test.createTestingModule({ imports: [OrdersModule] }).compile();
      const app = await moduleRef.init();
      try {
        const id = await lastValueFrom(app.get(OrdersService).client.emit<string>(`orders-${n}`, { n }));
        const check = server.client();
        expect(await check.xrange(`orders-${n}`, '-', '+')).toHaveLength(1);
        expect(id).toMatch(/^\d+-\d+$/);
        check.disconnect();
      } finally {
        await app.close();
      }
    });
  }
});
