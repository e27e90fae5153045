import { BadRequestException, HttpException, NotFoundException, ServiceUnavailableException } from '@nestjs/common';
import { RedisStreamsClaimError } from '../claim/claim.errors.js';
import { RedisStreamsOptionError, RedisStreamsPartitionedStreamError } from '../errors.js';
import type { Redactor } from '../redaction.js';
import { isRedisUnavailable } from '../redis/redis-unavailable.js';

/**
 * Runs an API call and turns what the caller can fix into 400 / 404 with the message (bad
 * input, a missing stream or group, a partitioned stream where one partition is needed, a Redis
 * refusal such as WRONGTYPE), and Redis unreachable or refusing the connection into 503 with the
 * message (the operator sees why the page is empty: a Cluster's ACL rule to add, a timeout), each
 * cleaned by `redactor` (the answers' one: no password, no connection location). Anything else
 * stays a 500, whose body Nest keeps generic.
 */
export async function answer<T>(redactor: Redactor, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw httpError(redactor, error);
  }
}

function httpError(redactor: Redactor, error: unknown): unknown {
  if (error instanceof HttpException || !(error instanceof Error)) return error;
  const message = redactor.text(error.message);
  if (isRedisUnavailable(error)) return new ServiceUnavailableException(message);
  if (error instanceof RedisStreamsClaimError && error.reason !== 'redis-error') {
    return error.reason === 'wrong-type' ? new BadRequestException(message) : new NotFoundException(message);
  }
  if (error instanceof RedisStreamsOptionError || error instanceof RedisStreamsPartitionedStreamError || error instanceof RedisStreamsClaimError || error.name === 'ReplyError') {
    return new BadRequestException(message);
  }
  return error;
}
