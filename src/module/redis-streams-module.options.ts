import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { StreamClaimServiceOptions } from '../claim/claim.types.js';
import type { RedisConnection } from '../redis/connection.js';
import type { DeadLetterServiceOptions } from '../recovery/dead-letter.service.js';
import type { RedisStreamsServerOptions } from '../server/options.js';

/**
 * What `RedisStreamsModule.forRoot` takes (and `forRootAsync`'s factory returns), provided as
 * `REDIS_STREAMS_MODULE_OPTIONS`. Features read their own section (add yours here).
 */
export interface RedisStreamsModuleOptions {
  /** The shared command connection (`REDIS_STREAMS_CONNECTION`): URL, ioredis options, or a client (then it stays yours). */
  connection?: RedisConnection;
  /** Defaults for servers built by `RedisStreamsServerFactory.create()` (connection: the module's). */
  server?: Partial<RedisStreamsServerOptions>;
  /** `StreamClaimService`: where STORE files go (default `os.tmpdir()/nestjs-redis-streams`). */
  claim?: StreamClaimServiceOptions;
  /**
   * Options of the injectable `DeadLetterService` (key naming, MAXLEN, batch size). Its
   * `deadLetterKey` is the app's one dead-letter key setting: servers built by
   * `RedisStreamsServerFactory` write their dead letters there too.
   */
  deadLetters?: DeadLetterServiceOptions;
  /** Other features' sections (claim, recovery, …) ride along untouched. */
  [feature: string]: unknown;
}

export interface RedisStreamsModuleRootOptions extends RedisStreamsModuleOptions {
  /** Register the module globally (its providers injectable everywhere without importing it). */
  isGlobal?: boolean;
}

export interface RedisStreamsModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory: (...args: never[]) => RedisStreamsModuleOptions | Promise<RedisStreamsModuleOptions>;
  inject?: FactoryProvider['inject'];
  isGlobal?: boolean;
}
