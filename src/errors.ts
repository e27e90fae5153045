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
  /**
   * The socket error's code (`ECONNREFUSED`, `ETIMEDOUT`, `ENOTFOUND`, `ECONNRESET`, …), as Nest's
   * own transports carry it, so code that maps `error.code` works unchanged; `undefined` when the
   * cause has none (refused credentials).
   */
  readonly code: string | undefined;

  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options);
    this.code = options?.code ?? connectionErrorCode(options?.cause);
  }
}

/**
 * The code a connection failure carries: a socket error's own (`ECONNREFUSED`, …), else
 * `ETIMEDOUT` for ioredis' "Command timed out" (its command and connect deadlines), else none.
 */
export function connectionErrorCode(error: unknown): string | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  return (error as { message?: unknown }).message === 'Command timed out' ? 'ETIMEDOUT' : undefined;
}

/**
 * The Redis server lacks a command the transport needs: it is older than the version that brought
 * the command, or the command was renamed or disabled (`rename-command`).
 */
export class RedisStreamsMissingCommandError extends Error {
  override readonly name = 'RedisStreamsMissingCommandError';

  constructor(
    /** The command, upper case, e.g. `XAUTOCLAIM`. */
    readonly command: string,
    /** The first Redis version that has it, e.g. `6.2`. */
    readonly since: string,
    /** What needs it, e.g. `the claim service`. */
    readonly neededBy: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Redis does not know the command ${command}, which ${neededBy} needs: it needs Redis ${since} or later ` +
        `(this server is older, or ${command} was renamed or disabled with rename-command)`,
      options,
    );
  }
}

/**
 * An option asks for a feature the connected Redis server lacks (probed, never guessed from the
 * version string). Thrown by `listen()` or a client's first connect, before any entry is written
 * or acknowledged the new way, so the failure is one clear error, never one per message.
 */
export class RedisStreamsCapabilityError extends Error {
  override readonly name = 'RedisStreamsCapabilityError';

  constructor(
    /** The option that needs it, e.g. `trim.onlyAcked`. */
    readonly option: string,
    /** The capability of `RedisStreamsCapabilities` it needs, e.g. `deletionPolicies`. */
    readonly capability: string,
    /** The first Redis version that has it, e.g. `8.2`. */
    readonly since: string,
    /** What the option would send, e.g. `XADD … ACKED`. */
    readonly feature: string,
  ) {
    super(
      `Option "${option}" needs ${feature} (capability "${capability}", Redis ${since} or later), which this Redis server lacks; ` +
        `remove the option or use a server that has it`,
    );
  }
}

/**
 * The partition count of a stream differs between this side and what the other side recorded (its
 * metadata key): producers would write partitions no consumer reads, or consumers miss some. Also
 * thrown when one side does not partition the stream (`partitions` 1) while the other did. Thrown
 * by `listen()` on the server, by the emit or send on the client; nothing is written before.
 */
export class RedisStreamsPartitionMismatchError extends Error {
  override readonly name = 'RedisStreamsPartitionMismatchError';

  constructor(
    /** The stream (without partition suffix), e.g. `orders`. */
    readonly stream: string,
    /** This side's partition count. */
    readonly partitions: number,
    /** The count recorded in the metadata key. */
    readonly recorded: number,
    /** The metadata key, e.g. `{orders}:partitions`. */
    readonly metadataKey: string,
  ) {
    super(
      (partitions === 1
        ? `stream "${stream}" is not partitioned here, but "${metadataKey}" records ${recorded} partitions ("${stream}:p0" …): ` +
          `this side would use "${stream}" itself, which the other side never touches; `
        : `stream "${stream}" is configured with ${partitions} partitions here, but "${metadataKey}" records ${recorded}: `) +
        `producer and consumer must use the same partitions setting (to change it: drain the stream, delete "${metadataKey}", restart both sides)`,
    );
  }
}

/**
 * A stream's partition metadata key (`{orders}:partitions`) holds what the package never writes:
 * a count outside 1..1024 (`MAX_PARTITIONS`), something that is not an integer, or a value of
 * another type. Every reader of the key fails with it, before anything is read or written on the
 * partitions: the first emit or send of the pattern, `listen()`, the claim, inspection and
 * dead-letter services, the CLI. A count of 10^10 would otherwise make 10^10 partition keys.
 */
export class RedisStreamsPartitionMetadataError extends Error {
  override readonly name = 'RedisStreamsPartitionMetadataError';

  constructor(
    /** The stream (without partition suffix), e.g. `orders`. */
    readonly stream: string,
    /** The metadata key, e.g. `{orders}:partitions`. */
    readonly metadataKey: string,
    /** What the key holds; `undefined` when it is not a string key. */
    readonly value: string | undefined,
    /** What is wrong with it, e.g. `count 10000000000 is outside 1..1024`. */
    reason: string,
  ) {
    super(
      `invalid partition metadata in "${metadataKey}": ${reason}; the key records the partitions setting that producers and workers of "${stream}" share: ` +
        `set it to that count, or delete it and restart them`,
    );
  }
}

/**
 * An operation that works on one stream key (claim, ack, inspecting or redriving a dead letter by
 * id) was given a partitioned stream (`orders`, recorded in `{orders}:partitions`), which has no
 * key of its own: name one of `partitionKeys` (`orders:p0` …) instead. Operations over a whole
 * stream (sizes, lists, `'all'`) aggregate the partitions themselves.
 */
export class RedisStreamsPartitionedStreamError extends Error {
  override readonly name = 'RedisStreamsPartitionedStreamError';

  constructor(
    /** The partitioned stream, e.g. `orders`. */
    readonly stream: string,
    /** Its partition stream keys, `orders:p0` …. */
    readonly partitionKeys: readonly string[],
    /** What was asked, e.g. `inspect`. */
    readonly operation: string,
  ) {
    super(
      `stream "${stream}" is partitioned into ${partitionKeys.length} streams (${describeKeys(partitionKeys)}): ` +
        `${operation} works on one of them, give its key`,
    );
  }
}

/** `orders:p0, orders:p1, …, orders:p7` for many keys. */
export function describeKeys(keys: readonly string[]): string {
  return keys.length <= 4 ? keys.join(', ') : `${keys.slice(0, 2).join(', ')}, …, ${keys.at(-1)}`;
}
