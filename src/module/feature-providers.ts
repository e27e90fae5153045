import type { Provider } from '@nestjs/common';
import { DeadLetterService, REDIS_STREAMS_DEAD_LETTER_OPTIONS } from '../recovery/dead-letter.service.js';
import { RedisStreamsRecovery } from '../recovery/redis-streams-recovery.js';
import { StreamClaimService, StreamInspectionService } from './claim-services.js';
import type { RedisStreamsModuleOptions } from './redis-streams-module.options.js';
import { RedisStreamsServerFactory } from './redis-streams-server.factory.js';
import { REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

/** `DeadLetterService` options from the module options' `deadLetters` section. */
const deadLetterOptionsProvider: Provider = {
  provide: REDIS_STREAMS_DEAD_LETTER_OPTIONS,
  useFactory: (options: RedisStreamsModuleOptions) => options.deadLetters ?? {},
  inject: [REDIS_STREAMS_MODULE_OPTIONS],
};

/**
 * Providers every `RedisStreamsModule.forRoot` / `forRootAsync` registers and exports, next to
 * `REDIS_STREAMS_MODULE_OPTIONS` and `REDIS_STREAMS_CONNECTION` (which they may inject).
 * Features append their services here (claim service, recovery, dead letters, health).
 */
export const FEATURE_PROVIDERS: Provider[] = [
  RedisStreamsServerFactory,
  StreamClaimService,
  StreamInspectionService,
  deadLetterOptionsProvider,
  DeadLetterService,
  RedisStreamsRecovery,
];
