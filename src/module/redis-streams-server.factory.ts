import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../redis/connection.js';
import type { RedisStreamsServerOptions } from '../server/options.js';
import { RedisStreamsServer } from '../server/redis-streams.server.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from './tokens.js';

/**
 * Builds `RedisStreamsServer`s from the module's options and connection:
 * `NestFactory.createMicroservice(AppModule, { inject: [RedisStreamsServerFactory], useFactory: (f) => ({ strategy: f.create({ group: 'workers' }) }) })`.
 */
@Injectable()
export class RedisStreamsServerFactory {
  constructor(
    @Inject(REDIS_STREAMS_MODULE_OPTIONS) private readonly options: RedisStreamsModuleOptions,
    @Inject(REDIS_STREAMS_CONNECTION) private readonly connection: RedisClient,
  ) {}

  /** A server with the module's `server` defaults, then `overrides`; commands share the module connection, reads get their own. */
  create(overrides: Partial<RedisStreamsServerOptions> = {}): RedisStreamsServer {
    return new RedisStreamsServer({
      ...this.options.server,
      connection: this.connection,
      ...overrides,
    } as RedisStreamsServerOptions);
  }
}
