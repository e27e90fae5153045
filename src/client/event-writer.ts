import { randomUUID } from 'node:crypto';
import type { ReadPacket } from '@nestjs/microservices';
import { deliveryTimeOf } from '../delayed/delivery-time.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { ProducerTrace } from '../telemetry/telemetry.js';
import { pushEntryFields, pushRawFields, validateHeaders, type OutgoingPacket } from './entry-fields.js';
import { idmpArgs } from './idempotent-emit.js';
import { EMPTY_OPTIONS, isThenable, serializedPacket, unwrapRecord } from './outgoing-packet.js';
import type { PartitionRouter } from './partition-router.js';
import { delayedHoldArgs, sendHold } from './delayed-emit.js';
import type { ProducerConnection, XAddArgs } from './producer-connection.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import { RedisStreamsRecord } from './redis-streams-record.js';
import type { XAddWriter } from './xadd-writer.js';

/** What writing an event takes from the client. */
export interface EventWriterHost {
  readonly config: ResolvedClientOptions;
  readonly producer: ProducerConnection;
  readonly xadds: XAddWriter;
  /** Picks the stream (or partition) of each event. */
  readonly router: PartitionRouter;
  /** No custom serializer: the packet is encoded straight into the XADD arguments. */
  readonly identitySerializer: boolean;
  /** Nest's serializer (only called when it is not the identity). */
  serialize(packet: OutgoingPacket): unknown;
  /** Nest's `normalizePattern`. */
  normalize(pattern: unknown): string;
}

/** The emit path: one event, one XADD (raw or in the default format), in a producer span when telemetry is on. */
export class EventWriter {
  constructor(private readonly host: EventWriterHost) {}

  /** The XADD of an event. Rejections are raw ioredis errors; `emit` wraps them (off the hot path). */
  dispatch<T>(packet: ReadPacket): Promise<T> {
    let route;
    try {
      route = this.host.router.route(this.host.normalize(packet.pattern), unwrapRecord(packet.data).options);
    } catch (error) {
      return Promise.reject(error);
    }
    const { stream, ready } = route;
    // The first event of a partitioned pattern waits for the check of its partition count.
    return ready === undefined ? this.traced<T>(packet, stream) : ready.then(() => this.traced<T>(packet, stream));
  }

  private traced<T>(packet: ReadPacket, stream: string): Promise<T> {
    const { telemetry } = this.host.producer;
    if (telemetry === undefined) return this.write<T>(packet, stream, undefined);
    const trace = telemetry.startSend(stream);
    const written = this.write<T>(packet, stream, trace);
    written.then(
      (id) => trace.end({ id: id as string | null }),
      (error: unknown) => trace.end({ error }),
    );
    return written;
  }

  /** The XADD, or for a delayed emit (`held`) the hold script call. */
  private send(args: XAddArgs, stream: string, held: boolean): Promise<string | null> {
    return held ? sendHold(this.host.producer.client, stream, args) : this.host.xadds.send(args);
  }

  /** `trace`: the producer span whose context goes into the entry's headers. */
  private write<T>(packet: ReadPacket, stream: string, trace: ProducerTrace | undefined): Promise<T> {
    const { config, xadds } = this.host;
    try {
      const record = packet.data instanceof RedisStreamsRecord ? (packet.data as RedisStreamsRecord) : undefined;
      const options = record ? record.options : EMPTY_OPTIONS;
      const data = record ? record.data : packet.data;
      const pattern = this.host.normalize(packet.pattern);
      const trimming = xadds.trimmingFor(pattern, options);
      const noMkStream = options.noMkStream ?? config.noMkStream;
      // A delayed or recurring emit writes a hold instead of the XADD (same fields, docs/scheduling.md).
      const held = options.delay !== undefined || options.deliverAt !== undefined || options.repeat !== undefined;
      const time = held ? deliveryTimeOf(options.delay, options.deliverAt) : undefined;
      const { producer } = this.host;
      const args = held
        ? delayedHoldArgs(randomUUID(), time, options, trimming, noMkStream, producer.capabilities)
        : xadds.head(stream, trimming, noMkStream, idmpArgs(config.producerId, config.idempotence, options.idempotencyKey, producer.capabilities));
      if (args === undefined) return producer.clockReady().then(() => this.write<T>(packet, stream, trace));
      if (options.raw) {
        if (options.headers !== undefined) {
          throw new RedisStreamsOptionError('headers', 'a raw record is written as it is and cannot carry headers');
        }
        pushRawFields(args, data);
        return this.send(args, stream, held) as Promise<T>;
      }
      const given = options.headers === undefined ? undefined : validateHeaders(options.headers);
      const headers = trace === undefined ? given : { ...trace.headers, ...given };
      if (this.host.identitySerializer) {
        pushEntryFields(args, pattern, data, packet.metadata, headers);
        return this.send(args, stream, held) as Promise<T>;
      }
      const outgoing: OutgoingPacket = { pattern, data, metadata: packet.metadata };
      const serialized = this.host.serialize(outgoing);
      const write = (value: unknown) => {
        const final = serializedPacket(outgoing, value);
        pushEntryFields(args, final.pattern, final.data, final.metadata, headers);
        return this.send(args, stream, held);
      };
      return (isThenable(serialized) ? serialized.then(write) : write(serialized)) as Promise<T>;
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
