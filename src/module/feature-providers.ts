import type { Provider } from '@nestjs/common';
import { StreamClaimService } from '../claim/claim.service.js';
import { StreamInspectionService } from '../claim/inspection.service.js';
import { RedisStreamsServerFactory } from './redis-streams-server.factory.js';

/**
 * Providers every `RedisStreamsModule.forRoot` / `forRootAsync` registers and exports, next to
 * `REDIS_STREAMS_MODULE_OPTIONS` and `REDIS_STREAMS_CONNECTION` (which they may inject).
 * Features append their services here (claim service, recovery, dead letters, health).
 */
export const FEATURE_PROVIDERS: Provider[] = [RedisStreamsServerFactory, StreamClaimService, StreamInspectionService];
