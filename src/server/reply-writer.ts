import { encodeReplyArgs, type ReplyPacket } from '../codec/reply.js';
import type { RedisClient } from '../redis/connection.js';

export interface ReplyLimits {
  readonly maxLen: number;
  readonly ttlMs: number;
}

/**
 * Writes one reply to the requester's reply stream and refreshes the stream's expiry in one
 * MULTI, so a reply stream whose client died expires on its own.
 */
export async function writeReply(
  client: RedisClient,
  replyTo: string,
  correlationId: string,
  packet: ReplyPacket,
  limits: ReplyLimits,
): Promise<void> {
  const results = await client
    .multi()
    .xadd(replyTo, 'MAXLEN', '~', limits.maxLen, '*', ...encodeReplyArgs(correlationId, packet))
    .pexpire(replyTo, limits.ttlMs)
    .exec();
  const failed = results?.find(([error]) => error !== null);
  if (results === null || results === undefined) throw new Error(`reply to "${replyTo}" was discarded (MULTI aborted)`);
  if (failed) throw failed[0] as Error;
}
