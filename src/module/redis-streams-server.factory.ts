import { Inject, Injectable } from '@nestjs/common';
import type { RedisClient } from '../redis/connection.js';
import type { RedisStreamsServerOptions } from '../server/options.js';
import { RedisStreamsServer } from '../server/redis-streams.server.js';
import { recoveryWithDeadLetterKey } from './dead-letter-key.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

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

  /**
   * A server with the module's `server` defaults, then `overrides`; commands share the module
   * connection, reads get their own. Its dead-letter key is the module's `deadLetters.deadLetterKey`
   * (the one `DeadLetterService` reads); an override naming another one is a `RedisStreamsOptionError`.
   */
  create(overrides: Partial<RedisStreamsServerOptions> = {}): RedisStreamsServer {
    const options = { ...this.options.server, connection: this.connection, ...overrides } as RedisStreamsServerOptions;
    const recovery = recoveryWithDeadLetterKey(options.recovery, this.options.deadLetters?.deadLetterKey);
    return new RedisStreamsServer(recovery === undefined ? options : { ...options, recovery });
  }
}
