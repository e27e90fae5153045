import { randomUUID } from 'node:crypto';
import type { ReadPacket } from '@nestjs/microservices';
import { deliveryTimeOf } from '../delayed/delivery-time.js';
import { RedisStreamsOptionError } from '../errors.js';
import { partitionStreamKey } from '../partitions/partition-keys.js';
import type { ProducerTrace, Telemetry } from '../telemetry/telemetry.js';
import { contentPartitionOf } from './content-partition.js';
import { checkPattern } from './pattern-check.js';
import { delayedHoldArgs, sendHold } from './delayed-emit.js';
import { pushBodyFields, pushHeadersField, pushRawFields, validateHeaders, type OutgoingPacket } from './entry-fields.js';
import { idmpArgs } from './idempotent-emit.js';
import { EMPTY_OPTIONS, isThenable, serializedPacket, unwrapRecord } from './outgoing-packet.js';
import type { PartitionRouter, Route } from './partition-router.js';
import type { ProducerConnection, XAddArgs } from './producer-connection.js';
import type { ResolvedClientOptions } from './redis-streams-client.options.js';
import { RedisStreamsRecord } from './redis-streams-record.js';
import type { CompiledTrimming } from './trimming.js';
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

/** The span of one emit: started at once, or (on a route by content) once its partition is known. */
interface EmitSpan {
  readonly telemetry: Telemetry;
  trace: ProducerTrace | undefined;
}

/** The emit path: one event, one XADD (raw or in the default format), in a producer span when telemetry is on. */
export class EventWriter {
  constructor(private readonly host: EventWriterHost) {}

  /** The XADD of an event. Rejections are raw ioredis errors; `emit` wraps them (off the hot path). */
  dispatch<T>(packet: ReadPacket): Promise<T> {
    let route: Route;
    try {
      route = this.host.router.routeEvent(checkPattern(this.host.normalize(packet.pattern)), unwrapRecord(packet.data).options);
    } catch (error) {
      return Promise.reject(error);
    }
    const { ready } = route;
    // The first event of a partitioned pattern waits for the check of its partition count.
    return ready === undefined ? this.traced<T>(packet, route) : ready.then(() => this.traced<T>(packet, route));
  }

  private traced<T>(packet: ReadPacket, route: Route): Promise<T> {
    const { telemetry } = this.host.producer;
    if (telemetry === undefined) return this.write<T>(packet, route, undefined);
    // The span is named after the stream: on a route by content, write() starts it once that is known.
    const span: EmitSpan = { telemetry, trace: route.byContent === undefined ? telemetry.startSend(route.stream) : undefined };
    const written = this.write<T>(packet, route, span);
    written.then(
      (id) => traceOf(span, route.stream).end({ id: id as string | null }),
      (error: unknown) => traceOf(span, route.stream).end({ error }),
    );
    return written;
  }

  /** `span`: the producer span whose context goes into the entry's headers. */
  private write<T>(packet: ReadPacket, route: Route, span: EmitSpan | undefined): Promise<T> {
    const { config, xadds, producer } = this.host;
    try {
      const record = packet.data instanceof RedisStreamsRecord ? (packet.data as RedisStreamsRecord) : undefined;
      const options = record ? record.options : EMPTY_OPTIONS;
      const data = record ? record.data : packet.data;
      const pattern = this.host.normalize(packet.pattern);
      const trimming = xadds.trimmingFor(pattern, options);
      const noMkStream = options.noMkStream ?? config.noMkStream;
      // A delayed or recurring emit writes a hold instead of the XADD (same fields, docs/scheduling.md).
      const held = options.delay !== undefined || options.deliverAt !== undefined || options.repeat !== undefined;
      const args = held
        ? delayedHoldArgs(randomUUID(), deliveryTimeOf(options.delay, options.deliverAt), options, trimming, noMkStream, producer.capabilities)
        : xadds.head(route.stream, trimming, noMkStream, idmpArgs(config.producerId, config.idempotence, options.idempotencyKey));
      if (args === undefined) return producer.clockReady().then(() => this.write<T>(packet, route, span));
      const fieldsFrom = args.length;
      if (options.raw) {
        if (options.headers !== undefined) {
          throw new RedisStreamsOptionError('headers', 'a raw record is written as it is and cannot carry headers');
        }
        pushRawFields(args, data);
        const stream = streamOf(args, fieldsFrom, route, held);
        if (span !== undefined) traceOf(span, stream);
        return this.send(args, stream, trimming, held) as Promise<T>;
      }
      const given = options.headers === undefined ? undefined : validateHeaders(options.headers);
      if (this.host.identitySerializer) {
        pushBodyFields(args, pattern, data);
        return this.sendEvent(args, fieldsFrom, trimming, route, span, packet.metadata, given, held) as Promise<T>;
      }
      const outgoing: OutgoingPacket = { pattern, data, metadata: packet.metadata };
      const serialized = this.host.serialize(outgoing);
      const write = (value: unknown) => {
        const final = serializedPacket(outgoing, value);
        pushBodyFields(args, final.pattern, final.data);
        return this.sendEvent(args, fieldsFrom, trimming, route, span, final.metadata, given, held);
      };
      return (isThenable(serialized) ? serialized.then(write) : write(serialized)) as Promise<T>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * After the body fields: on a route by content the partition they pick (every field but the
   * headers, which carry the span's context), then the `headers` field and the XADD.
   */
  private sendEvent(
    args: XAddArgs,
    fieldsFrom: number,
    trimming: CompiledTrimming,
    route: Route,
    span: EmitSpan | undefined,
    metadata: Record<string, string> | undefined,
    given: Record<string, string> | undefined,
    held: boolean,
  ): Promise<string | null> {
    const stream = streamOf(args, fieldsFrom, route, held);
    pushHeadersField(args, metadata, span === undefined ? given : { ...traceOf(span, stream).headers, ...given });
    return this.send(args, stream, trimming, held);
  }

  /** The XADD, or for a delayed emit (`held`) the hold script call on `stream`. */
  private send(args: XAddArgs, stream: string, trimming: CompiledTrimming, held: boolean): Promise<string | null> {
    return held ? sendHold(this.host.producer.client, stream, args) : this.host.xadds.send(args, trimming);
  }
}

/** The span of an emit, started on `stream` if it was not yet (a route by content; or it failed before its partition was known). */
function traceOf(span: EmitSpan, stream: string): ProducerTrace {
  return (span.trace ??= span.telemetry.startSend(stream));
}

/**
 * The stream an event goes to: on a route by content, the partition that the fields from
 * `fieldsFrom` on pick, which becomes the XADD's key (a hold names its stream apart: `held`).
 */
function streamOf(args: XAddArgs, fieldsFrom: number, route: Route, held: boolean): string {
  if (route.byContent === undefined) return route.stream;
  const stream = partitionStreamKey(route.stream, contentPartitionOf(args, fieldsFrom, route.byContent));
  if (!held) args[0] = stream;
  return stream;
}
