import type { RepeatOptions } from '../delayed/repeat-option.js';
import type { StreamTrimming } from './trimming.js';

/** Options of one `emit()` / `send()` call, carried by a {@link RedisStreamsRecord}. */
export interface RedisStreamsRecordOptions {
  /** String headers written with the entry (`headers` field, JSON); the handler's context shows them. */
  headers?: Record<string, string>;
  /**
   * Events only: `data` is a field map written as it is (`XADD stream * item kettle qty 1`), with
   * no `pattern`/`data`/`headers` fields, so any other consumer (redis-cli, Python) can read it.
   * Values may be strings, numbers or Buffers.
   */
  raw?: boolean;
  /** Trimming of this call, instead of the pattern's or the client's. */
  trim?: StreamTrimming;
  /** Events only: do not create the stream when it does not exist (`NOMKSTREAM`); nothing is written then. */
  noMkStream?: boolean;
  /** Requests only: reply timeout of this call in ms, instead of the client's `timeout`. */
  timeout?: number;
  /**
   * Requests only: how many final replies the call waits for, default 1. Every group whose
   * `@MessagePattern` reads the stream answers each request (a broadcast): with `replies: 2` the
   * Observable emits the values of both answers and completes after the second final reply. Fewer
   * within the timeout: `RedisStreamsTimeoutError` (`receivedReplies`) after the values that came.
   */
  replies?: number;
  /**
   * Events only (Redis 8.6+, capability `idmp`): `XADD … IDMP <producerId> <idempotencyKey>`. Redis
   * writes one entry per key and producer: a repeated emit with the same key returns the first
   * entry's id and adds nothing, so the client may retry it (`idempotence.retries`). On a server
   * without IDMP the emit fails with `RedisStreamsCapabilityError`.
   */
  idempotencyKey?: string;
  /**
   * A pattern with `partitions` (client option): the key whose stable hash (FNV-1a of its UTF-8
   * bytes, mod the count) picks the partition, so entries of one key land in one partition, in
   * order. Without it: the `idempotencyKey` when there is one (a repeated emit lands where the
   * first did); else `repeat:<repeat.key>` for a recurring emit (registered again, it meets its one
   * hold); else, for an IDMPAUTO emit, a hash of the entry's fields but `headers` (the same data
   * lands together); else round robin. Ignored by a pattern that is not partitioned.
   */
  partitionKey?: string;
  /**
   * A pattern with priority lanes (client option `priorities`): the lane this entry goes to,
   * `<stream>:<priority>`. Without it, the pattern's middle lane. A name that is not one of the
   * pattern's lanes, or any priority on a pattern without lanes, fails the call with
   * `RedisStreamsOptionError` (option `priority`).
   */
  priority?: string;
  /**
   * Events only: deliver the entry this long after the emit (ms or an ISO-8601 duration such as
   * `PT10M`, measured on Redis' clock). The entry is held next to the stream (`{orders}:delayed`)
   * and added to it, once, by a worker of the stream when due (docs/scheduling.md); the emit
   * resolves with the hold id instead of an entry id. `send()` refuses it.
   */
  delay?: number | string;
  /** Events only: deliver the entry at this time (a `Date` or Unix ms; past: at once). As `delay`, which it excludes. */
  deliverAt?: Date | number;
  /**
   * Events only: a recurring entry, added to the stream every `every` (ms or ISO-8601) from its
   * first occurrence (`delay` / `deliverAt`, default one period from now) by the workers, once per
   * occurrence; `key` names it, so emitting it again (each start-up) keeps one schedule. The emit
   * resolves with its hold id `repeat:<key>` (docs/scheduling.md).
   */
  repeat?: RepeatOptions;
}

/**
 * Data plus per-call options, in the style of Nest's `RmqRecord` / `MqttRecord`:
 * `client.emit('orders', new RedisStreamsRecord({ item: 'kettle' }, { raw: true }))`.
 */
export class RedisStreamsRecord<TData = unknown> {
  constructor(
    readonly data: TData,
    readonly options: RedisStreamsRecordOptions = {},
  ) {}
}

/** Builder for {@link RedisStreamsRecord}. */
export class RedisStreamsRecordBuilder<TData = unknown> {
  private options: RedisStreamsRecordOptions = {};

  constructor(private data?: TData) {}

  setData(data: TData): this {
    this.data = data;
    return this;
  }

  setOptions(options: RedisStreamsRecordOptions): this {
    this.options = { ...this.options, ...options };
    return this;
  }

  setHeaders(headers: Record<string, string>): this {
    return this.setOptions({ headers });
  }

  setRaw(raw = true): this {
    return this.setOptions({ raw });
  }

  setTrim(trim: StreamTrimming): this {
    return this.setOptions({ trim });
  }

  setNoMkStream(noMkStream = true): this {
    return this.setOptions({ noMkStream });
  }

  setIdempotencyKey(idempotencyKey: string): this {
    return this.setOptions({ idempotencyKey });
  }

  setPartitionKey(partitionKey: string): this {
    return this.setOptions({ partitionKey });
  }

  setPriority(priority: string): this {
    return this.setOptions({ priority });
  }

  setDelay(delay: number | string): this {
    return this.setOptions({ delay });
  }

  setDeliverAt(deliverAt: Date | number): this {
    return this.setOptions({ deliverAt });
  }

  setRepeat(repeat: RepeatOptions): this {
    return this.setOptions({ repeat });
  }

  setTimeout(timeout: number): this {
    return this.setOptions({ timeout });
  }

  setReplies(replies: number): this {
    return this.setOptions({ replies });
  }

  build(): RedisStreamsRecord<TData> {
    return new RedisStreamsRecord(this.data as TData, { ...this.options });
  }
}
