import { Inject, Injectable, Optional } from '@nestjs/common';
import { REDIS_STREAMS_CONNECTION, REDIS_STREAMS_MODULE_OPTIONS } from '../tokens.js';
import type { RedisClient } from '../redis/connection.js';
import type { ClaimModuleOptions, StreamClaimServiceOptions } from './claim.types.js';
import { StreamClaimer } from './stream-claimer.js';

export { ACK_BATCH_SIZE, DELETED_IDS_LIMIT, validateAckArguments } from './stream-claimer.js';

/**
 * The claim operation as a Nest provider: `claim(options)` (XAUTOCLAIM pages under the seed's
 * contract) and `ack(key, group, ids)`. Reads `claim.storeDirectory` from the module options;
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
