import { Module, type DynamicModule, type FactoryProvider, type InjectionToken, type ModuleMetadata } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { REDIS_STREAMS_CONNECTION } from '../tokens.js';
import { describe } from '../validation.js';
import type { RedisConnection } from '../redis/connection.js';
import { RedisStreamsClient } from './redis-streams-client.js';
import type { RedisStreamsClientOptions } from './redis-streams-client.options.js';
import { RedisStreamsScheduler } from './redis-streams-scheduler.js';

interface SchedulerRegistration {
  /**
   * Also provide a `RedisStreamsScheduler` on this client: `true` under the class itself
   * (`constructor(scheduler: RedisStreamsScheduler)`), or under the token given (one per client
   * when several clients have one).
   */
  scheduler?: true | InjectionToken;
}

export interface RedisStreamsClientRegistration extends RedisStreamsClientOptions, SchedulerRegistration {
  /** Injection token of the client: `@Inject(name) client: ClientProxy`. */
  name: InjectionToken;
}

export interface RedisStreamsClientAsyncRegistration extends Pick<ModuleMetadata, 'imports'>, SchedulerRegistration {
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
    const providers: FactoryProvider[] = registrations.flatMap(({ name, scheduler, ...options }) => [
      {
        provide: name,
        useFactory: (moduleConnection?: RedisConnection) => createClient(options, moduleConnection),
        inject: [{ token: REDIS_STREAMS_CONNECTION, optional: true }],
      },
      ...schedulerProviders(name, scheduler),
    ]);
    checkUniqueTokens(providers);
    return { module: RedisStreamsClientModule, providers, exports: providers.map((p) => p.provide) };
  }

  static registerAsync(...registrations: RedisStreamsClientAsyncRegistration[]): DynamicModule {
    const providers: FactoryProvider[] = registrations.flatMap(({ name, scheduler, useFactory, inject = [] }) => [
      {
        provide: name,
        useFactory: async (...args: unknown[]) => {
          const moduleConnection = args.pop() as RedisConnection | undefined;
          return createClient(await useFactory(...(args as never[])), moduleConnection);
        },
        inject: [...inject, { token: REDIS_STREAMS_CONNECTION, optional: true }],
      },
      ...schedulerProviders(name, scheduler),
    ]);
    checkUniqueTokens(providers);
    const imports = registrations.flatMap((r) => r.imports ?? []);
    return { module: RedisStreamsClientModule, imports, providers, exports: providers.map((p) => p.provide) };
  }
}

function schedulerProviders(client: InjectionToken, scheduler: SchedulerRegistration['scheduler']): FactoryProvider[] {
  if (scheduler === undefined) return [];
  if (scheduler !== true && !isInjectionToken(scheduler)) {
    throw new RedisStreamsOptionError('scheduler', `must be true or an injection token (string, symbol, class), got ${describe(scheduler)}`);
  }
  return [
    {
      provide: scheduler === true ? RedisStreamsScheduler : scheduler,
      useFactory: (registered: RedisStreamsClient) => new RedisStreamsScheduler(registered),
      inject: [client],
    },
  ];
}

function isInjectionToken(value: unknown): value is InjectionToken {
  return (typeof value === 'string' && value !== '') || typeof value === 'symbol' || typeof value === 'function';
}

/** Two schedulers under the class token (two clients with `scheduler: true`) would silently be one. */
function checkUniqueTokens(providers: FactoryProvider[]): void {
  const seen = new Set<InjectionToken>();
  for (const { provide } of providers) {
    if (seen.has(provide)) {
      throw new RedisStreamsOptionError('scheduler', `token ${tokenName(provide)} is registered twice: give each client's scheduler its own token`);
    }
    seen.add(provide);
  }
}

function tokenName(token: InjectionToken): string {
  if (typeof token === 'function') return token.name;
  return typeof token === 'symbol' ? token.toString() : JSON.stringify(token);
}

function createClient(options: RedisStreamsClientOptions, moduleConnection: RedisConnection | undefined): RedisStreamsClient {
  const connection = options.connection ?? moduleConnection;
  return new RedisStreamsClient(connection === undefined ? options : { ...options, connection });
}
