import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { closeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';
import { REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

/** Opens the module's shared connection and closes it on module destroy when we opened it. */
@Injectable()
export class RedisStreamsConnectionHost implements OnModuleDestroy {
  private readonly opened: OpenedConnection;

  constructor(@Inject(REDIS_STREAMS_MODULE_OPTIONS) options: RedisStreamsModuleOptions) {
    this.opened = openConnection(options.connection, 'module');
    // ioredis reports every failed reconnect as an 'error' event; without a listener it would print them all.
    if (this.opened.owned) this.opened.client.on('error', () => undefined);
  }

  get client(): RedisClient {
    return this.opened.client;
  }

  async onModuleDestroy(): Promise<void> {
    await closeConnection(this.opened);
  }
}
