import { describeKeys, RedisStreamsPartitionMetadataError } from '../errors.js';
import { partitionStreamKeys } from '../partitions/partition-keys.js';
import { missingCommandError } from '../redis/capabilities.js';
import { errorMessage } from '../error-message.js';

/** Why a claim or inspection command failed in a way the caller can act on. */
export type ClaimFailureReason = 'missing-group' | 'missing-stream' | 'wrong-type' | 'redis-error';

/**
 * A claim, ack or inspection command failed: the group or stream does not exist, the key is not
 * a stream, or Redis refused the command. `cause` keeps the Redis error.
 */
export class RedisStreamsClaimError extends Error {
  override readonly name = 'RedisStreamsClaimError';

  /**
   * Set when the key is missing because it is a partitioned stream (`reason` 'missing-stream'):
   * its partition keys (`orders:p0` …), each a stream of its own to run the command on.
   */
  readonly partitionKeys: readonly string[] | undefined;

  constructor(
    readonly reason: ClaimFailureReason,
    message: string,
    options?: { cause?: unknown; partitionKeys?: readonly string[] },
  ) {
    super(message, options);
    this.partitionKeys = options?.partitionKeys;
  }
}

/**
 * Turns a Redis reply error into a `RedisStreamsClaimError` that names the stream and group.
 * `streamExists` is only asked on NOGROUP (an error path), to tell a missing stream from a
 * missing group without a round trip on the normal path; "no such key" needs no asking.
 */
export async function translateRedisError(
  error: unknown,
  key: string,
  group: string | undefined,
  streamExists: () => Promise<boolean>,
  /** Asked only when the stream is missing: its recorded partition count (1 when not partitioned). */
  partitionCount?: () => Promise<number>,
): Promise<unknown> {
  if (error instanceof RedisStreamsClaimError) return error;
  // XAUTOCLAIM needs Redis 6.2: say so instead of passing on "ERR unknown command".
  const missing = missingCommandError(error, 'the claim service');
  if (missing !== undefined) return missing;
  const message = errorMessage(error);
  // "no such key" (XINFO) says the stream was missing when the command ran, even if it exists by
  // now (a promotion created it meanwhile); NOGROUP may mean the stream or the group: EXISTS tells.
  const noSuchKey = message.startsWith('ERR no such key');
  if (noSuchKey || message.startsWith('NOGROUP')) {
    const exists = !noSuchKey && (await streamExists().catch(() => true));
    if (!exists) {
      if (partitionCount === undefined) return missingStreamError(key, error);
      // Invalid metadata is the answer itself: it names the key to fix.
      return partitionCountHint(partitionCount).then((partitions) => missingStreamError(key, error, partitions), (invalid: unknown) => invalid);
    }
    if (group !== undefined) {
      return new RedisStreamsClaimError('missing-group', `group "${group}" does not exist on stream "${key}"`, {
        cause: error,
      });
    }
  }
  if (message.startsWith('WRONGTYPE')) {
    return new RedisStreamsClaimError('wrong-type', `key "${key}" does not hold a stream`, { cause: error });
  }
  if (/^[A-Z]+ /.test(message) && isReplyError(error)) {
    return new RedisStreamsClaimError('redis-error', `Redis refused the command on stream "${key}": ${message}`, {
      cause: error,
    });
  }
  return error;
}

/**
 * The recorded partition count of a missing stream, for its error message: 1 when it cannot be
 * read (an ACL without GET on the metadata key, the connection gone), since it is only a hint;
 * invalid metadata (`RedisStreamsPartitionMetadataError`) rejects, so it is reported, not hidden.
 */
export function partitionCountHint(read: () => Promise<number>): Promise<number> {
  return read().catch((error: unknown) => {
    if (error instanceof RedisStreamsPartitionMetadataError) throw error;
    return 1;
  });
}

/** A missing stream; on a partitioned one, the error names its partitions, which do exist. */
export function missingStreamError(key: string, cause: unknown, partitions = 1): RedisStreamsClaimError {
  if (partitions <= 1) return new RedisStreamsClaimError('missing-stream', `stream "${key}" does not exist`, { cause });
  const partitionKeys = partitionStreamKeys(key, partitions);
  return new RedisStreamsClaimError(
    'missing-stream',
    `stream "${key}" has no key of its own: it is partitioned into ${partitions} streams (${describeKeys(partitionKeys)}); give one of them`,
    { cause, partitionKeys },
  );
}

/** ioredis' ReplyError: an answer from the server, as opposed to a connection problem. */
function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}
