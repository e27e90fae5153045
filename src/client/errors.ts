import { NO_MESSAGE_HANDLER } from '../codec/reply.js';
import { connectionErrorCode } from '../errors.js';
import { errorMessage } from '../error-message.js';
import { isConnectionDown, NOT_WRITEABLE } from '../redis/redis-unavailable.js';

/** Nest's own text for "no handler", so callers can match it the same way on every transport. */
export { NO_MESSAGE_HANDLER };

/** A `send()` got no reply (or fewer than its record's `replies`) within its timeout. */
export class RedisStreamsTimeoutError extends Error {
  override readonly name = 'RedisStreamsTimeoutError';

  constructor(
    readonly pattern: string,
    readonly timeoutMs: number,
    /** The final replies the call waited for (its record's `replies`, default 1). */
    readonly expectedReplies = 1,
    /** The final replies that came; their values were emitted. */
    readonly receivedReplies = 0,
  ) {
    super(
      expectedReplies === 1
        ? `No reply to "${pattern}" within ${timeoutMs} ms`
        : `${receivedReplies} of ${expectedReplies} replies to "${pattern}" within ${timeoutMs} ms`,
    );
  }
}

/**
 * A request found nobody to handle it: its stream does not exist (no server created its group),
 * or the server that read it has no handler for its pattern. The message is Nest's own text.
 */
export class RedisStreamsNoHandlerError extends Error {
  override readonly name = 'RedisStreamsNoHandlerError';

  constructor(
    readonly pattern: string,
    readonly stream: string,
  ) {
    super(NO_MESSAGE_HANDLER);
  }
}

/**
 * A reply came for a pending request and could not be decoded: its `packet` is not JSON (bytes
 * written by a serializer, answer them with `rawReplies`), or the deserializer threw or rejected
 * (`cause`). The request fails at once, since its correlation id is known, instead of waiting out
 * its timeout.
 */
export class RedisStreamsReplyDecodeError extends Error {
  override readonly name = 'RedisStreamsReplyDecodeError';

  constructor(
    readonly pattern: string,
    /** The request's correlation id (the reply entry's `id` field). */
    readonly correlationId: string,
    readonly replyStream: string,
    /** The reply entry's id on the reply stream. */
    readonly entryId: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Cannot decode the reply to "${pattern}" (correlation id ${correlationId}, entry ${entryId} of "${replyStream}"): ${reason}`, options);
  }
}

/** Redis refused or did not answer an XADD (down, paused, reconnecting, wrong type...). */
export class RedisStreamsPublishError extends Error {
  override readonly name = 'RedisStreamsPublishError';
  /**
   * The connection failure's code, as Nest's transports carry it: the cause's own (a failed first
   * connect: its `RedisStreamsConnectionError`'s), `ETIMEDOUT` when Redis did not answer within
   * `commandTimeout`, and while the connection is down the code of its last socket error
   * (`ECONNREFUSED`…). `undefined` for a refusal by Redis itself (WRONGTYPE, OOM…).
   */
  readonly code: string | undefined;

  constructor(
    readonly stream: string,
    override readonly cause: unknown,
    /** The code of the connection's last error, for a cause that only says it is not ready. */
    connectionCode?: string,
  ) {
    super(`Cannot add an entry to stream "${stream}": ${describeCause(cause)}`);
    this.code = connectionErrorCode(cause) ?? (isConnectionDown(cause) ? connectionCode : undefined);
  }
}

function describeCause(cause: unknown): string {
  const message = errorMessage(cause);
  if (message === NOT_WRITEABLE) return 'the Redis connection is not ready (disconnected or reconnecting)';
  if (message === 'Command timed out') return 'Redis did not answer within commandTimeout';
  return message;
}
