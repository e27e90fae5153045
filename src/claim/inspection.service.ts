import { Inject, Injectable } from '@nestjs/common';
import { REDIS_STREAMS_CONNECTION } from '../tokens.js';
import type { RedisClient } from '../redis/connection.js';
import { StreamInspector } from './stream-inspector.js';

export { resolvePendingRangeOptions } from './stream-inspector.js';

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
