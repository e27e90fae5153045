import { Inject, Injectable, Optional } from '@nestjs/common';
import type { ClaimModuleOptions, StreamClaimServiceOptions } from '../claim/claim.types.js';
import { StreamClaimer } from '../claim/stream-claimer.js';
import { StreamInspector } from '../claim/stream-inspector.js';
import type { RedisClient } from '../redis/connection.js';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';

// The Nest providers over claim/'s plain classes live here, so claim/ knows nothing of DI or the module.

/**
 * The claim operation as a Nest provider: `claim(options)` (XAUTOCLAIM pages, docs/claim.md)
 * and `ack(key, group, ids)`. Reads `claim.storeDirectory` from the module options;
 * by hand: `new StreamClaimService(redis, { storeDirectory })`.
 */
@Injectable()
export class StreamClaimService extends StreamClaimer {
  constructor(
    @Inject(REDIS_STREAMS_CONNECTION) redis: RedisClient,
    @Optional() @Inject(REDIS_STREAMS_MODULE_OPTIONS) options?: ClaimModuleOptions | StreamClaimServiceOptions | null,
  ) {
    super(redis, options);
  }
}

/**
 * Pending summary and entries (XPENDING), groups, consumers and stream info (XINFO), with typed
 * results, as a Nest provider. By hand: `new StreamInspectionService(redis)`.
 */
@Injectable()
export class StreamInspectionService extends StreamInspector {
  constructor(@Inject(REDIS_STREAMS_CONNECTION) redis: RedisClient) {
    super(redis);
  }
}
