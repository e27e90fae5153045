import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { RedisStreamsConnectionError } from '../errors.js';
import { connectFailure } from '../redis/connect-failure.js';
import { failCommandsOnClusterAclRefusal } from '../redis/cluster-acl-refused-commands.js';
import { closeConnection, describeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';
import { REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

/** Opens the module's shared connection and closes it on module destroy when we opened it. */
@Injectable()
export class RedisStreamsConnectionHost implements OnModuleDestroy {
  private readonly opened: OpenedConnection;
  private readonly stopRefusals: () => void = () => undefined;

  constructor(@Inject(REDIS_STREAMS_MODULE_OPTIONS) options: RedisStreamsModuleOptions) {
    this.opened = openConnection(options.connection, 'module');
    if (!this.opened.owned) return;
    // ioredis reports every failed reconnect as an 'error' event; without a listener it would print them all.
    this.opened.client.on('error', () => undefined);
    // Nothing waits for this connection to be ready: a Cluster user the ACL refuses what ioredis
    // needs to connect fails the commands (the dashboard's, the claim services') naming the rule.
    const where = describeConnection(options.connection);
    this.stopRefusals = failCommandsOnClusterAclRefusal(this.opened.client, (refusal) => {
      const { reason, cause } = connectFailure(refusal, undefined);
      return new RedisStreamsConnectionError(`cannot connect to Redis at ${where}: ${reason}`, { cause });
    });
  }

  get client(): RedisClient {
    return this.opened.client;
  }

  async onModuleDestroy(): Promise<void> {
    this.stopRefusals();
    await closeConnection(this.opened);
  }
}
