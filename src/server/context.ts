import { BaseRpcContext } from '@nestjs/microservices';
import type { Headers, StreamFields } from '../codec/wire-format.js';
import { timerDurationOption } from '../duration.js';
import { RECORD_HANDLER_ERROR } from './handler-error-capture.js';

/** Options of `ctx.nack()`. */
export interface NackOptions {
  /** Bring the entry back after this wait (ms or ISO-8601, such as `PT30S`) instead of after `minIdleTime`. */
  delay?: number | string;
}

/**
 * What a context reads of its entry: the server's `InFlightEntry`, described by shape so that this
 * file (which option types name) does not import in-flight.ts and its binding types.
 */
export interface ContextEntry {
  readonly binding: { readonly stream: string; readonly group: string };
  readonly id: string;
  readonly deliveryCount: number;
  readonly fields: StreamFields;
  handlerError: unknown;
}

/** What the server does for a context's `ack()`, `nack()` and `extendLease()`. */
export interface EntrySettler {
  ack(entry: ContextEntry): Promise<void>;
  /** `delayMs`: `nack({ delay })`, the entry comes back after that wait. */
  nack(entry: ContextEntry, delayMs?: number): void;
  extendLease(entry: ContextEntry, ms: number | undefined): Promise<void>;
  /** `ctx.rateLimited(ms)`: every worker of the group backs off for `ms`; the entry comes back after it. */
  rateLimited(entry: ContextEntry, ms: number): Promise<void>;
  /** `ctx.signal`: the delivery's abort signal, made on first read. */
  signal(entry: ContextEntry): AbortSignal;
  /** `ctx.progress(value)`: the delivery's latest progress, written coalesced. */
  progress(entry: ContextEntry, value: unknown): Promise<void>;
}

/** The message a context describes; `getArgs()[0]`. */
export interface RedisStreamsMessage {
  readonly stream: string;
  readonly id: string;
  readonly group: string;
  readonly consumer: string;
  /** 1 on first delivery; Redis' delivery counter for re-reads and claims. */
  readonly deliveryCount: number;
  /** The entry's fields exactly as stored. */
  readonly fields: StreamFields;
  readonly headers: Headers;
  readonly pattern: string;
}

const NO_HEADERS: Headers = Object.freeze(Object.create(null) as Headers);
const NO_ARGS = [] as unknown as [RedisStreamsMessage];

/**
 * `@Ctx()` of a handler served by `RedisStreamsServer`.
 * In `manual` ack mode the handler calls `ack()` once the work is done, or `nack()` to leave the
 * entry pending (it is redelivered later by recovery or the consumer's restart) and free its slot.
 */
export class RedisStreamsContext extends BaseRpcContext<[RedisStreamsMessage]> {
  private message: RedisStreamsMessage | undefined;

  constructor(
    private readonly entry: ContextEntry,
    private readonly consumer: string,
    private readonly pattern: string,
    private readonly headers: Headers | undefined,
    private readonly settler: EntrySettler,
  ) {
    // The message object is built only when asked for (getArgs / getMessage): most handlers never do.
    super(NO_ARGS);
  }

  override getArgs(): [RedisStreamsMessage] {
    return [this.getMessage()];
  }

  override getArgByIndex(index: number): RedisStreamsMessage {
    return this.getArgs()[index] as RedisStreamsMessage;
  }

  getMessage(): RedisStreamsMessage {
    this.message ??= {
      stream: this.entry.binding.stream,
      id: this.entry.id,
      group: this.entry.binding.group,
      consumer: this.consumer,
      deliveryCount: this.entry.deliveryCount,
      fields: this.entry.fields,
      headers: this.getHeaders(),
      pattern: this.pattern,
    };
    return this.message;
  }

  getStream(): string {
    return this.entry.binding.stream;
  }

  getId(): string {
    return this.entry.id;
  }

  getGroup(): string {
    return this.entry.binding.group;
  }

  getConsumer(): string {
    return this.consumer;
  }

  getDeliveryCount(): number {
    return this.entry.deliveryCount;
  }

  getFields(): StreamFields {
    return this.entry.fields;
  }

  getHeaders(): Headers {
    return this.headers ?? NO_HEADERS;
  }

  /**
   * The metadata the producer attached (the `headers` field), or `undefined` when it sent none, as
   * Nest's `RedisContext` / `TcpContext`. `getHeaders()` is the same map, `{}` when absent.
   */
  getMetadata(): Headers | undefined {
    return this.headers;
  }

  getPattern(): string {
    return this.pattern;
  }

  /**
   * Acks the entry (batched with others); resolves once Redis acked it. Rejects when the XACK
   * failed (also emitted as the server's `error` event) or the server is closed: the entry then
   * stays pending. In auto mode it acks early. A second call returns the first call's outcome; a
   * call after `nack()` does nothing.
   */
  ack(): Promise<void> {
    return this.settler.ack(this.entry);
  }

  /**
   * Leaves the entry pending and frees its slot here. In auto mode it also prevents the ack.
   * Without a delay the entry comes back after `minIdleTime` (recovery) or the consumer's restart.
   * With `{ delay }` (ms or ISO-8601) it waits with the group's retry consumer, as a failed entry
   * under a retry policy does, and comes back after that wait (docs/recovery.md, "Nack with a
   * delay"), its delivery count kept; a bad delay throws `RedisStreamsOptionError` naming `delay`.
   */
  nack(options?: NackOptions): void {
    if (options === undefined || options.delay === undefined) this.settler.nack(this.entry);
    else this.settler.nack(this.entry, timerDurationOption('delay', options.delay));
  }

  /**
   * Aborts when the handler should stop: its time limit passed (`extras.timeout`), its lease was
   * lost to another worker, the shutdown deadline passed, or an operator cancelled the entry.
   * `signal.reason` is a `RedisStreamsAbortError` whose `reason` says which (`timeout`,
   * `lease-lost`, `shutdown`, `cancelled`). Pass it to `fetch`, database drivers, `setTimeout` of
   * `node:timers/promises`. Made on first read: a handler that never reads it pays nothing.
   * See docs/lifecycle.md.
   */
  get signal(): AbortSignal {
    return this.settler.signal(this.entry);
  }

  /**
   * Reports how far the handler got (any JSON-serializable value up to 64 KiB as JSON, such as
   * `{ done: 40, of: 100 }`), for `client.progress()`, `client.entryStatus()` and `client.watch()`.
   * Cheap enough per item of a long job: reports within 100 ms are one write of the last value
   * (kept with a TTL, next to the stream); a retry's progress replaces the earlier delivery's.
   * Resolves once the write that carries it is done; a bad value throws
   * `RedisStreamsProgressError` at once. See docs/lifecycle.md.
   */
  progress(value: unknown): Promise<void> {
    return this.settler.progress(this.entry, value);
  }

  /**
   * Tells recovery this consumer still works on the entry (resets its idle time now, owner-checked)
   * so a long handler is not robbed; also with `recovery.leases: false` (no renewal timer).
   */
  extendLease(): Promise<void> {
    return this.settler.extendLease(this.entry, undefined);
  }

  /**
   * The API this handler calls answered "too many requests" (HTTP 429): no entry of this handler
   * starts on any worker of the group for `wait` (ms or ISO-8601, such as a `Retry-After`), and
   * this entry is nacked with that delay (it comes back after it, its delivery count one higher,
   * as any redelivery). Needs `extras.rateLimit` on the handler (the group's shared bucket holds
   * the back-off); without it, or with a bad wait, it throws `RedisStreamsOptionError`. Resolves
   * once every worker can see the back-off. See docs/flow-control.md.
   */
  rateLimited(wait: number | string): Promise<void> {
    return this.settler.rateLimited(this.entry, timerDurationOption('wait', wait));
  }

  /** @internal Called by Nest's RPC exception filter (see handler-error-capture.ts) with the handler's own error. */
  [RECORD_HANDLER_ERROR](error: unknown): void {
    this.entry.handlerError = error;
  }
}
