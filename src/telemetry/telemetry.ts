import type { Attributes, Context, Counter, Histogram, Link, Meter, Span, Tracer } from '@opentelemetry/api';
import type { Headers } from '../codec/wire-format.js';
import { Attr, DestinationAttributes, Variants, type GroupAttributes, type SendAttributes } from './destination-attributes.js';
import { hasMeterProvider, hasTracerProvider, loadOpenTelemetryApi, registeredProviders, type OpenTelemetryApi } from './opentelemetry-api.js';
import type { ResolvedTelemetryOptions } from './telemetry-options.js';
import { TurnCounter } from './turn-counter.js';

/** What telemetry reads of recovery's notices (recovery-events.ts), by shape: telemetry knows no recovery. */
export interface DeadLetteredEntry {
  readonly stream: string;
  readonly group: string;
  readonly id: string;
  readonly reason: string;
  readonly error: string;
  readonly deliveryCount: number;
  readonly deadLetterKey: string;
  /** `''` when the dead letter has no id (nothing to draw on a trace). */
  readonly deadLetterId: string;
}
export interface RecoveredEntries {
  readonly stream: string;
  readonly group: string;
  readonly ids: readonly string[];
}
export interface LostEntries {
  readonly stream: string;
  readonly group: string;
  readonly reason: string;
  readonly count: number;
}

const SCOPE = 'nestjs-redis-streams';
/** One name for every dead letter, whatever its stream (the stream is an attribute). */
const DEAD_LETTER_SPAN = 'dead_letter';

/** An entry as the server hands it: the telemetry keys its spans by this object. */
export interface TracedEntry {
  readonly binding: { readonly stream: string; readonly group: string };
  readonly id: string;
  readonly deliveryCount: number;
}

/** A producer span (emit / send / reply) and the trace headers to write into its entry. */
export interface ProducerTrace {
  /** `traceparent` / `tracestate` as the global propagator writes them. */
  readonly headers: Headers;
  /** Ends the span: with the entry id it was written as, or the error. Later calls do nothing. */
  end(result: { id?: string | null; error?: unknown }): void;
}

interface Processing {
  readonly start: number;
  readonly span: Span | undefined;
  readonly attributes: GroupAttributes;
  error?: unknown;
}

/** What the span of a batch keeps until the batch is settled. */
interface BatchProcessing extends Processing {
  readonly size: number;
}

/**
 * OpenTelemetry of one server or client: spans per the messaging semantic conventions, trace
 * context in the entry's headers through the global propagator, and the metrics. Exists only
 * when `@opentelemetry/api` is installed and a tracer or meter provider is registered: the
 * server and client hold `undefined` otherwise and test that one reference per entry.
 */
export class Telemetry {
  private readonly processing = new WeakMap<TracedEntry, Processing>();
  /** Keyed by the batch's context object. */
  private readonly batches = new WeakMap<object, BatchProcessing>();
  private readonly instruments: Instruments | undefined;
  private readonly destinations = new DestinationAttributes();
  private readonly errorTypes = new Variants('error.type');
  private readonly reasons = new Variants(Attr.reason);

  private constructor(
    private readonly api: OpenTelemetryApi,
    private readonly tracer: Tracer | undefined,
    meter: Meter | undefined,
  ) {
    this.instruments = meter === undefined ? undefined : new Instruments(meter);
  }

  /** Loads the API once; undefined when it is absent, turned off, or nothing is registered. */
  static async load(options: ResolvedTelemetryOptions): Promise<Telemetry | undefined> {
    const registered = registeredProviders();
    if (!(options.tracing && registered.trace) && !(options.metrics && registered.metrics)) return undefined;
    const api = await loadOpenTelemetryApi();
    if (api === undefined) return undefined;
    const tracer = options.tracing && hasTracerProvider(api) ? api.trace.getTracer(SCOPE) : undefined;
    const meter = options.metrics && hasMeterProvider(api) ? api.metrics.getMeter(SCOPE) : undefined;
    return tracer === undefined && meter === undefined ? undefined : new Telemetry(api, tracer, meter);
  }

  get meter(): Meter | undefined {
    return this.instruments?.meter;
  }

  // ---- producer side ----

  /**
   * Starts a PRODUCER span `send <stream>` under the caller's active context and returns the
   * trace headers to write. `conversationId`: the correlation id of a request.
   */
  startSend(stream: string, conversationId?: string): ProducerTrace {
    return this.startProducer(this.destinations.send(stream), undefined, conversationId, undefined);
  }

  /**
   * The PRODUCER span of a request's reply, a child of the request's process span: `send
   * (temporary)`, since `replyTo` is the requester's own reply stream (its key goes on the span only).
   */
  startReply(entry: TracedEntry, replyTo: string, correlationId: string): ProducerTrace {
    const span = this.processing.get(entry)?.span;
    const parent = span === undefined ? undefined : this.api.trace.setSpan(this.api.ROOT_CONTEXT, span);
    return this.startProducer(this.destinations.reply, replyTo, correlationId, parent);
  }

  /** `temporaryName`: the key of a temporary destination (a span attribute, never a metric one). */
  private startProducer(destination: SendAttributes, temporaryName: string | undefined, conversationId: string | undefined, parent: Context | undefined): ProducerTrace {
    const { api, tracer } = this;
    const headers: Headers = {};
    let span: Span | undefined;
    if (tracer !== undefined) {
      const active = parent ?? api.context.active();
      // The cached attributes only: the per-message ones are set once the span is known to record,
      // so an unsampled send builds no attribute object (the sampler sees the destination's).
      span = tracer.startSpan(destination.spanName, { kind: api.SpanKind.PRODUCER, attributes: destination.span }, active);
      if (span.isRecording()) {
        if (temporaryName !== undefined) span.setAttribute('messaging.destination.name', temporaryName);
        if (conversationId !== undefined) span.setAttribute('messaging.message.conversation_id', conversationId);
      }
      // Unsampled too: the context says so downstream (a parent-based sampler follows it).
      api.propagation.inject(api.trace.setSpan(active, span), headers);
    }
    let ended = false;
    const instruments = this.instruments;
    return {
      headers,
      end: ({ id, error }) => {
        if (ended) return;
        ended = true;
        const failed = error !== undefined;
        instruments?.sent.add(1, failed ? this.errorTypes.of(destination.metric, errorType(error)) : destination.metric);
        if (span === undefined) return;
        if (span.isRecording()) {
          if (typeof id === 'string') span.setAttribute('messaging.message.id', id);
          if (failed) this.fail(span, error);
        }
        span.end();
      },
    };
  }

  // ---- consumer side ----

  /** Entries read or claimed for a stream + group (`messaging.client.consumed.messages`). */
  consumed(stream: string, group: string, count: number): void {
    if (count > 0) this.instruments?.consumed.add(count, this.destinations.group(stream, group).receive);
  }

  /**
   * Runs `handle` inside a CONSUMER span `process <stream>` whose parent is the producer's
   * context from the entry's headers (a new trace when it has none: a foreign producer).
   */
  process<T>(entry: TracedEntry, headers: Headers | undefined, consumer: string, handle: () => T): T {
    const { api } = this;
    const attributes = this.destinations.group(entry.binding.stream, entry.binding.group);
    if (this.tracer === undefined) {
      this.processing.set(entry, { start: performance.now(), span: undefined, attributes });
      return handle();
    }
    const parent = headers === undefined ? api.ROOT_CONTEXT : api.propagation.extract(api.ROOT_CONTEXT, headers);
    // The cached attributes only (what a sampler sees); the per-entry ones when the span records:
    // an unsampled entry builds no attribute object.
    const span = this.tracer.startSpan(attributes.processSpanName, { kind: api.SpanKind.CONSUMER, attributes: attributes.process }, parent);
    if (span.isRecording()) {
      span.setAttribute('messaging.message.id', entry.id);
      span.setAttribute('messaging.client.id', consumer);
      span.setAttribute(Attr.deliveryCount, entry.deliveryCount);
    }
    this.processing.set(entry, { start: performance.now(), span, attributes });
    return api.context.with(api.trace.setSpan(parent, span), handle);
  }

  /** The handler failed (the span gets the exception and an error status when it ends). */
  failed(entry: TracedEntry, error: unknown): void {
    const processing = this.processing.get(entry);
    if (processing !== undefined) processing.error = error ?? new Error('handler failed');
  }

  /** The handler is done (its entry is then acked, released or left to a manual ack). */
  finished(entry: TracedEntry, succeeded: boolean): void {
    const processing = this.processing.get(entry);
    if (processing === undefined) return;
    this.processing.delete(entry);
    const failed = !succeeded || processing.error !== undefined;
    const outcome = failed ? 'failure' : 'success';
    const instruments = this.instruments;
    if (instruments !== undefined) {
      const { attributes } = processing;
      instruments.processDuration.record((performance.now() - processing.start) / 1000, failed ? this.errorTypes.of(attributes.process, errorType(processing.error)) : attributes.process);
      instruments.processed.add(1, failed ? attributes.failed : attributes.succeeded);
    }
    const span = processing.span;
    if (span === undefined) return;
    if (span.isRecording()) {
      span.setAttribute(Attr.outcome, outcome);
      if (failed) this.fail(span, processing.error);
    }
    span.end();
  }

  /**
   * A batch handler's batch (one binding), per the conventions' batch form: one CONSUMER span
   * `process <stream>` with `messaging.batch.message_count` and a link to each entry's producer
   * context (a batch has many producers, so none is its parent: it starts a trace of its own).
   * `batch` keys it until `finishedBatch`; `headers[i]` are the headers of `entries[i]`.
   */
  processBatch<T>(batch: object, entries: readonly TracedEntry[], headers: readonly (Headers | undefined)[], consumer: string, handle: () => T): T {
    const { api, tracer } = this;
    const { stream, group } = (entries[0] as TracedEntry).binding;
    const attributes = this.destinations.group(stream, group);
    const size = entries.length;
    if (tracer === undefined) {
      this.batches.set(batch, { start: performance.now(), span: undefined, attributes, size });
      return handle();
    }
    // Links go in at the start, where a sampler sees them.
    const links: Link[] = [];
    for (let i = 0; i < size; i += 1) {
      const carrier = headers[i];
      if (carrier === undefined) continue;
      const producer = api.trace.getSpanContext(api.propagation.extract(api.ROOT_CONTEXT, carrier));
      if (producer !== undefined) links.push({ context: producer, attributes: { 'messaging.message.id': (entries[i] as TracedEntry).id } });
    }
    const span = tracer.startSpan(attributes.processSpanName, { kind: api.SpanKind.CONSUMER, attributes: attributes.process, links, root: true }, api.ROOT_CONTEXT);
    if (span.isRecording()) {
      span.setAttribute('messaging.batch.message_count', size);
      span.setAttribute('messaging.client.id', consumer);
    }
    this.batches.set(batch, { start: performance.now(), span, attributes, size });
    return api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), handle);
  }

  /**
   * The batch is settled: `failed` of its entries failed (all of them when the handler threw
   * `error`). Metrics per batch: one duration, the processed counter adds per outcome.
   */
  finishedBatch(batch: object, failed: number, error?: unknown): void {
    const processing = this.batches.get(batch);
    if (processing === undefined) return;
    this.batches.delete(batch);
    const { attributes, size, span } = processing;
    const instruments = this.instruments;
    if (instruments !== undefined) {
      const threw = error !== undefined;
      instruments.processDuration.record((performance.now() - processing.start) / 1000, threw ? this.errorTypes.of(attributes.process, errorType(error)) : attributes.process);
      if (failed < size) instruments.processed.add(size - failed, attributes.succeeded);
      if (failed > 0) instruments.processed.add(failed, attributes.failed);
    }
    if (span === undefined) return;
    if (span.isRecording()) {
      span.setAttribute(Attr.outcome, failed > 0 ? 'failure' : 'success');
      if (failed > 0) span.setAttribute(Attr.batchFailed, failed);
      if (error !== undefined) this.fail(span, error);
    }
    span.end();
  }

  /** Acks were requested for `count` entries of this stream + group. */
  acked(stream: string, group: string, count = 1): void {
    this.instruments?.acked.add(count, this.destinations.group(stream, group).group);
  }

  /** Recovery claimed entries from idle consumers. */
  recovered(notice: RecoveredEntries): void {
    this.instruments?.recovered.add(notice.ids.length, this.destinations.group(notice.stream, notice.group).group);
  }

  /** Entries trimmed or deleted before they were handled. */
  lost(notice: LostEntries): void {
    this.instruments?.lost.add(notice.count, this.reasons.of(this.destinations.group(notice.stream, notice.group).group, notice.reason));
  }

  /** An entry was dead-lettered: counted by reason. */
  deadLettered(notice: DeadLetteredEntry): void {
    this.instruments?.deadLettered.add(1, this.reasons.of(this.destinations.group(notice.stream, notice.group).group, notice.reason));
  }

  /** Whether `traceDeadLetter` would draw this dead letter: the caller reads the letter's headers for it then. */
  tracesDeadLetter(notice: DeadLetteredEntry): boolean {
    return this.tracer !== undefined && notice.deadLetterId !== '';
  }

  /**
   * Tracing on: a span `dead_letter` with a `dead_letter` event on the entry's own trace, whose
   * context is in `headers` (read from the dead-letter record). A constant name, the conventions'
   * settle operation (`messaging.operation.name` `dead_letter`, as Azure Service Bus names it);
   * the stream is an attribute.
   */
  traceDeadLetter(notice: DeadLetteredEntry, headers: Headers | undefined): void {
    if (this.tracer === undefined || notice.deadLetterId === '' || headers === undefined) return;
    const attributes = this.reasons.of(this.destinations.group(notice.stream, notice.group).deadLetter, notice.reason);
    const { api } = this;
    const parent = api.propagation.extract(api.ROOT_CONTEXT, headers);
    if (api.trace.getSpanContext(parent) === undefined) return;
    const eventAttributes: Attributes = {
      'messaging.message.id': notice.id,
      [Attr.reason]: notice.reason,
      [Attr.deliveryCount]: notice.deliveryCount,
      [Attr.deadLetterStream]: notice.deadLetterKey,
      [Attr.deadLetterId]: notice.deadLetterId,
      'error.message': notice.error,
    };
    const span = this.tracer.startSpan(DEAD_LETTER_SPAN, { kind: api.SpanKind.INTERNAL, attributes: { ...attributes, ...eventAttributes } }, parent);
    span.addEvent('dead_letter', eventAttributes);
    span.end();
  }

  private fail(span: Span, error: unknown): void {
    const message = errorMessage(error);
    span.recordException(error instanceof Error ? error : { message });
    span.setAttribute('error.type', errorType(error));
    span.setStatus({ code: this.api.SpanStatusCode.ERROR, message });
  }
}

/** The metric instruments (names and units per the messaging semantic conventions where they have one). */
class Instruments {
  /** Per emit, send and reply: summed per turn of the event loop, as the consumer's counters. */
  readonly sent: TurnCounter;
  readonly consumed: Counter;
  readonly processDuration: Histogram;
  /** Per entry: summed per turn of the event loop (turn-counter.ts). */
  readonly processed: TurnCounter;
  readonly acked: TurnCounter;
  readonly deadLettered: Counter;
  readonly recovered: Counter;
  readonly lost: Counter;

  constructor(readonly meter: Meter) {
    this.sent = new TurnCounter(meter.createCounter('messaging.client.sent.messages', { unit: '{message}', description: 'Entries the producer attempted to add (XADD)' }));
    this.consumed = meter.createCounter('messaging.client.consumed.messages', { unit: '{message}', description: 'Entries delivered to this consumer (read or claimed)' });
    this.processDuration = meter.createHistogram('messaging.process.duration', { unit: 's', description: 'Duration of handling one entry, or one batch of a batch handler' });
    this.processed = new TurnCounter(meter.createCounter('redis_streams.processed.messages', { unit: '{message}', description: 'Entries handled, by outcome (success, failure)' }));
    this.acked = new TurnCounter(meter.createCounter('redis_streams.acked.messages', { unit: '{message}', description: 'Entries acknowledged (XACK)' }));
    this.deadLettered = meter.createCounter('redis_streams.dead_lettered.messages', { unit: '{message}', description: 'Entries moved to the dead-letter stream, by reason' });
    this.recovered = meter.createCounter('redis_streams.recovered.messages', { unit: '{message}', description: 'Entries recovery claimed from idle consumers' });
    this.lost = meter.createCounter('redis_streams.lost.messages', { unit: '{message}', description: 'Entries trimmed or deleted before they were handled, by reason' });
  }
}

function errorType(error: unknown): string {
  if (error instanceof Error) return error.constructor.name || 'Error';
  return '_OTHER';
}

/** Nest's RPC filter turns handler errors into `{ status: 'error', message }` objects: their message counts. */
function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  const message = (error as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  try {
    return typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    return String(error);
  }
}

