/** A configuration value was rejected before any command was sent. `option` names it. */
export class RedisStreamsOptionError extends Error {
  override readonly name = 'RedisStreamsOptionError';

  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`Invalid option "${option}": ${message}`);
  }
}

/** A stream entry could not be decoded by the configured deserializer. */
export class RedisStreamsDecodeError extends Error {
  override readonly name = 'RedisStreamsDecodeError';

  constructor(
    readonly stream: string,
    readonly entryId: string,
    message: string,
  ) {
    super(`Cannot decode entry ${entryId} of stream "${stream}": ${message}`);
  }
}

/**
 * Redis could not be reached or refused authentication while a server or client started. The
 * message names the connection without its password; `cause` is the (cleaned) Redis error.
 */
export class RedisStreamsConnectionError extends Error {
  override readonly name = 'RedisStreamsConnectionError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
