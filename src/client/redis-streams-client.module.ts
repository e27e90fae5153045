import { Module, type DynamicModule, type FactoryProvider, type InjectionToken, type ModuleMetadata } from '@nestjs/common';
import { REDIS_STREAMS_CONNECTION } from '../tokens.js';
import type { RedisConnection } from '../redis/connection.js';
import { RedisStreamsClient } from './redis-streams-client.js';
import type { RedisStreamsClientOptions } from './redis-streams-client.options.js';

export interface RedisStreamsClientRegistration extends RedisStreamsClientOptions {
  /** Injection token of the client: `@Inject(name) client: ClientProxy`. */
  name: InjectionToken;
}

export interface RedisStreamsClientAsyncRegistration extends Pick<ModuleMetadata, 'imports'> {
  name: InjectionToken;
  useFactory: (...args: never[]) => RedisStreamsClientOptions | Promise<RedisStreamsClientOptions>;
  inject?: FactoryProvider['inject'];
}

/**
 * Registers `RedisStreamsClient`s as providers. Without a `connection`, a client uses the one
 * `RedisStreamsModule.forRoot` provides (duplicated: the client keeps its own sockets).
 * The client closes on application shutdown (call `app.enableShutdownHooks()` for signals; `app.close()` always does).
 * Exposed as `RedisStreamsModule.registerClient` / `registerClientAsync`.
 */
@Module({})
export class RedisStreamsClientModule {
  static register(...registrations: RedisStreamsClientRegistration[]): DynamicModule {
    const providers: FactoryProvider[] = registrations.map(({ name, ...options }) => ({
      provide: name,
      useFactory: (moduleConnection?: RedisConnection) => createClient(options, moduleConnection),
      inject: [{ token: REDIS_STREAMS_CONNECTION, optional: true }],
    }));
    return { module: RedisStreamsClientModule, providers, exports: providers.map((p) => p.provide) };
  }

  static registerAsync(...registrations: RedisStreamsClientAsyncRegistration[]): DynamicModule {
    const providers: FactoryProvider[] = registrations.map(({ name, useFactory, inject = [] }) => ({
      provide: name,
      useFactory: async (...args: unknown[]) => {
        const moduleConnection = args.pop() as RedisConnection | undefined;
        return createClient(await useFactory(...(args as never[])), moduleConnection);
      },
      inject: [...inject, { token: REDIS_STREAMS_CONNECTION, optional: true }],
    }));
    const imports = registrations.flatMap((r) => r.imports ?? []);
    return { module: RedisStreamsClientModule, imports, providers, exports: providers.map((p) => p.provide) };
  }
}

function createClient(options: RedisStreamsClientOptions, moduleConnection: RedisConnection | undefined): RedisStreamsClient {
  const connection = options.connection ?? moduleConnection;
  return new RedisStreamsClient(connection === undefined ? options : { ...options, connection });
}
