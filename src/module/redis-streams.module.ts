import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { RedisStreamsOptionError } from '../errors.js';
import { describe } from '../validation.js';
import { connectionOption } from '../redis/connection-option.js';
import { RedisStreamsClientModule } from '../client/redis-streams-client.module.js';
import { RedisStreamsConnectionHost } from './connection-host.js';
import { moduleDeadLetterKey } from './dead-letter-key.js';
import { DeadLetterListenerExplorer } from './dead-letter-listener-explorer.js';
import { FEATURE_PROVIDERS } from './feature-providers.js';
import type {
  RedisStreamsModuleAsyncOptions,
  RedisStreamsModuleOptions,
  RedisStreamsModuleRootOptions,
} from './redis-streams-module.options.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

/**
 * Provides the shared connection (`REDIS_STREAMS_CONNECTION`), the resolved options
 * (`REDIS_STREAMS_MODULE_OPTIONS`) and the feature services (`FEATURE_PROVIDERS`, among them
 * `RedisStreamsServerFactory`).
 */
@Module({})
export class RedisStreamsModule {
  static forRoot(options: RedisStreamsModuleRootOptions = {}): DynamicModule {
    const { isGlobal = false, ...moduleOptions } = checkModuleOptions(options) as RedisStreamsModuleRootOptions;
    return build({ provide: REDIS_STREAMS_MODULE_OPTIONS, useValue: moduleOptions }, [], isGlobal);
  }

  static forRootAsync(options: RedisStreamsModuleAsyncOptions): DynamicModule {
    if (options === null || typeof options !== 'object' || typeof options.useFactory !== 'function') {
      throw new RedisStreamsOptionError('useFactory', 'forRootAsync needs a useFactory function');
    }
    const optionsProvider: Provider = {
      provide: REDIS_STREAMS_MODULE_OPTIONS,
      useFactory: async (...args: never[]) => checkModuleOptions(await options.useFactory(...args)),
      inject: options.inject ?? [],
    };
    return build(optionsProvider, options.imports ?? [], options.isGlobal ?? false);
  }

  /** Registers `RedisStreamsClient`s (see RedisStreamsClientModule.register). */
  static registerClient(...registrations: Parameters<typeof RedisStreamsClientModule.register>): DynamicModule {
    return RedisStreamsClientModule.register(...registrations);
  }

  /** Registers `RedisStreamsClient`s built by factories (see RedisStreamsClientModule.registerAsync). */
  static registerClientAsync(...registrations: Parameters<typeof RedisStreamsClientModule.registerAsync>): DynamicModule {
    return RedisStreamsClientModule.registerAsync(...registrations);
  }
}

/**
 * The options and the shared connection live in a global core module, so clients registered with
 * `registerClient` (in any module) find the connection even when `forRoot` is not `isGlobal`.
 */
@Module({})
class RedisStreamsCoreModule {}

function build(optionsProvider: Provider, imports: DynamicModule['imports'], isGlobal: boolean): DynamicModule {
  const connectionProvider: Provider = {
    provide: REDIS_STREAMS_CONNECTION,
    useFactory: (host: RedisStreamsConnectionHost) => host.client,
    inject: [RedisStreamsConnectionHost],
  };
  const core: DynamicModule = {
    module: RedisStreamsCoreModule,
    global: true,
    imports: imports ?? [],
    providers: [optionsProvider, RedisStreamsConnectionHost, connectionProvider],
    exports: [REDIS_STREAMS_MODULE_OPTIONS, REDIS_STREAMS_CONNECTION],
  };
  return {
    module: RedisStreamsModule,
    global: isGlobal,
    imports: [core, DiscoveryModule],
    // The explorer registers the app's @OnDeadLetter() methods; not exported (nothing injects it).
    providers: [...FEATURE_PROVIDERS, DeadLetterListenerExplorer],
    exports: [core, ...FEATURE_PROVIDERS],
  };
}

function checkModuleOptions(options: unknown): RedisStreamsModuleOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedisStreamsOptionError('options', `RedisStreamsModule options must be an object, got ${describe(options)}`);
  }
  const { server, connection } = options as RedisStreamsModuleOptions;
  connectionOption('connection', connection);
  if (server !== undefined && (server === null || typeof server !== 'object')) {
    throw new RedisStreamsOptionError('server', `must be an object of server defaults, got ${describe(server)}`);
  }
  const { deadLetters } = options as RedisStreamsModuleOptions;
  if (deadLetters !== undefined && (deadLetters === null || typeof deadLetters !== 'object')) {
    throw new RedisStreamsOptionError('deadLetters', `must be an object of DeadLetterService options, got ${describe(deadLetters)}`);
  }
  // One dead-letter key for the service and the servers, whichever of the two spellings set it.
  const deadLetterKey = moduleDeadLetterKey(options as RedisStreamsModuleOptions);
  if (deadLetterKey === undefined) return options as RedisStreamsModuleOptions;
  return { ...(options as RedisStreamsModuleOptions), deadLetters: { ...deadLetters, deadLetterKey } };
}
