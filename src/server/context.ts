import { BaseRpcContext } from '@nestjs/microservices';
import type { Headers, StreamFields } from '../codec/wire-format.js';
import type { InFlightEntry } from './in-flight.js';

/** What the server does for a context's `ack()`, `nack()` and `extendLease()`. */
export interface EntrySettler {
  ack(entry: InFlightEntry): Promise<void>;
  nack(entry: InFlightEntry): void;
  extendLease(entry: InFlightEntry, ms: number | undefined): Promise<void>;
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

/**
 * `@Ctx()` of a handler served by `RedisStreamsServer`.
 * In `manual` ack mode the handler calls `ack()` once the work is done, or `nack()` to leave the
 * entry pending (it is redelivered later by recovery or the consumer's restart) and free its slot.
 */
export class RedisStreamsContext extends BaseRpcContext<[RedisStreamsMessage]> {
  constructor(
    private readonly entry: InFlightEntry,
    consumer: string,
    pattern: string,
    headers: Headers | undefined,
    private readonly settler: EntrySettler,
  ) {
    const { binding } = entry;
    super([
      {
        stream: binding.stream,
        id: entry.id,
        group: binding.group,
        consumer,
        deliveryCount: entry.deliveryCount,
        fields: entry.fields,
        headers: headers ?? NO_HEADERS,
        pattern,
      },
    ]);
  }

  getMessage(): RedisStreamsMessage {
    return this.args[0];
  }

  getStream(): string {
    return this.args[0].stream;
  }

  getId(): string {
    return this.args[0].id;
  }

  getGroup(): string {
    return this.args[0].group;
  }

  getConsumer(): string {
    return this.args[0].consumer;
  }

  getDeliveryCount(): number {
    return this.args[0].deliveryCount;
  }

  getFields(): StreamFields {
    return this.args[0].fields;
  }

  getHeaders(): Headers {
    return this.args[0].headers;
  }

  /** Alias of `getHeaders()`, matching Nest's `getMetadata()` on other contexts. */
  getMetadata(): Headers {
    return this.args[0].headers;
  }

  getPattern(): string {
    return this.args[0].pattern;
  }

  /**
   * Acks the entry (batched with others); resolves when Redis answered. In auto mode it acks
   * early. A second call, or a call after `nack()`, does nothing.
   */
  ack(): Promise<void> {
    return this.settler.ack(this.entry);
  }

  /** Leaves the entry pending and frees its slot here. In auto mode it also prevents the ack. */
  nack(): void {
    this.settler.nack(this.entry);
  }

  /**
   * Tells recovery this consumer still works on the entry (renews its idle time) so a long
   * handler is not robbed. Without a recovery provider that supports leases it does nothing.
   */
  extendLease(ms?: number): Promise<void> {
    return this.settler.extendLease(this.entry, ms);
  }
}
