import type { Logger } from '@nestjs/common';
import { isObservable, lastValueFrom } from 'rxjs';
import type { DecodedEntry, JsonStreamDeserializer, StreamDeserializer } from '../codec/stream-deserializer.js';
import { RedisStreamsDecodeError } from '../errors.js';
import type { LeaseExtender } from '../recovery/recovery-host.js';
import type { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { AckBatcher } from './ack-batcher.js';
import { AckSettlement } from './ack-settlement.js';
import { RedisStreamsContext, type EntrySettler } from './context.js';
import type { Dispatcher } from './dispatcher.js';
import { errorMessage } from '../error-message.js';
import type { IdempotencyRecords } from './idempotency.js';
import type { InFlightEntry } from './in-flight.js';
import type { ProcessingHooks } from './processing-hooks.js';
import { handleRequest } from './request-handling.js';
import type { DecodedRequest, RequestHost } from './request-replies.js';
import type { RetryReleaser } from './retry-releaser.js';
import { RunningStreams } from './running-streams.js';
import type { ServerEventEmitter } from './server-events.js';
import { runBatch, type BatchHost } from './batch/batch-runner.js';

/** What entry handling needs that does not change while the server lives. */
export interface EntryHandlingSetup {
  readonly consumer: string;
  readonly decoder: StreamDeserializer;
  /** The decoder when it is exactly the default one (not a subclass overriding `deserialize`). */
  readonly defaultDecoder: JsonStreamDeserializer | undefined;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  /** The server is closed: nothing is acked any more, a failed entry is not handed to retries. */
  readonly isClosed: () => boolean;
}

/** The parts `listen()` builds that carry an entry from its read to its ack. */
export interface EntryHandlingParts {
  readonly dispatcher: Dispatcher;
  readonly acker: AckBatcher;
  readonly retries: RetryReleaser;
  readonly records: IdempotencyRecords;
  /** Set only when OpenTelemetry is there and on: every per-entry hook tests this one reference. */
  readonly telemetry: Telemetry | undefined;
  /** What answering a request needs besides the settling done here. */
  readonly requests: Pick<RequestHost, 'replies' | 'handlerFor' | 'serialize'>;
}

/**
 * One entry from its admission to its settlement: decode, run the handler (a request through
 * request-handling.ts), then ack, release or hand to the retry consumer. The server's
 * `EntrySettler`: a context's `ack()`, `nack()` and `extendLease()` land here.
 */
export class EntryHandling implements EntrySettler {
  private dispatcher: Dispatcher | undefined;
  private retries: RetryReleaser | undefined;
  private records: IdempotencyRecords | undefined;
  private telemetry: Telemetry | undefined;
  private requests: RequestHost | undefined;
  private recovery: RecoveryScheduler | undefined;
  private leaseExtender: LeaseExtender | undefined;
  private batches: BatchHost | undefined;
  /** The streamed replies running: close() abandons those left after shutdownTimeout. */
  readonly streams = new RunningStreams();
  /** Nest's processing hooks, only once one is set: every per-entry step tests this one reference. */
  private processing: ProcessingHooks | undefined;

  private readonly settlement: AckSettlement;

  constructor(private readonly setup: EntryHandlingSetup) {
    this.settlement = new AckSettlement(setup.logger, setup.isClosed);
  }

  /** At `listen()`, once the parts exist. */
  wire(parts: EntryHandlingParts): void {
    this.dispatcher = parts.dispatcher;
    this.retries = parts.retries;
    this.records = parts.records;
    this.telemetry = parts.telemetry;
    this.settlement.wire(parts.dispatcher, parts.acker, parts.telemetry);
    this.requests = {
      ...parts.requests,
      telemetry: parts.telemetry,
      streams: this.streams,
      recordHandlerError: (entry, error) => this.recovery?.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error),
      emitError: (error) => this.setup.events.error(error),
      finish: (entry, succeeded) => this.finish(entry, succeeded),
      ackUnanswerable: (entry) => this.ackWithoutRunning(entry),
    };
  }

  /** Once recovery runs: dead letters of undecodable and exhausted entries, the handlers' own errors. */
  useRecovery(recovery: RecoveryScheduler | undefined): void {
    this.recovery = recovery;
  }

  /** Nest's processing hooks (set through the server's setters): from now on around every handled entry. */
  useProcessingHooks(hooks: ProcessingHooks): void {
    this.processing = hooks;
  }

  /** Installed by a recovery provider to make `ctx.extendLease()` renew idle times. */
  setLeaseExtender(extender: LeaseExtender | undefined): void {
    this.leaseExtender = extender;
  }

  /** The dispatcher's start of an entry. */
  readonly start = (entry: InFlightEntry): void => {
    this.handle(entry);
  };

  /** The dispatcher's start of a batch binding's batch (`extras.batch`): batch/batch-runner.ts runs and settles it. */
  readonly startBatch = (entries: InFlightEntry[]): void => {
    this.batches ??= this.batchHost();
    runBatch(this.batches, entries);
  };

  /** Gives an entry's slot back (its ack is done, or it stays pending). */
  readonly release = (entry: InFlightEntry): void => {
    this.dispatcher?.release(entry);
  };

  /** Gives back the slots of one XACK's entries at once. */
  readonly releaseAll = (entries: readonly InFlightEntry[]): void => {
    this.dispatcher?.releaseAll(entries);
  };

  // ---- EntrySettler (RedisStreamsContext) ----

  ack(entry: InFlightEntry): Promise<void> {
    return this.settlement.ack(entry);
  }

  /**
   * `delayMs` (`ctx.nack({ delay })`): released to the retry consumer with that wait, like a failed
   * entry under a retry policy, and recovery ticks cover the stream's retries from now on. Where
   * recovery does not run on the stream (`recovery: false`) or the server is closing, it stays
   * pending here as a plain nack (warned: it comes back after `minIdleTime` or a restart).
   */
  nack(entry: InFlightEntry, delayMs?: number): void {
    if (delayMs === undefined || entry.settled) {
      this.settlement.nack(entry);
      return;
    }
    const { stream, group } = entry.binding;
    const recovery = this.recovery;
    if (!this.setup.isClosed() && recovery?.recovers(stream, group) && this.retries?.releaseAfter(entry, delayMs, `nacked with a delay of ${delayMs} ms`)) {
      recovery.retryAfterNack(stream, group, delayMs);
      return;
    }
    this.setup.logger.warn(
      `nack of entry ${entry.id} of "${stream}" (group "${group}") with a delay: ${this.setup.isClosed() ? 'the server is closing' : 'recovery does not run on this stream'}; it stays pending here instead`,
    );
    this.settlement.nack(entry);
  }

  extendLease(entry: InFlightEntry, ms: number | undefined): Promise<void> {
    if (this.leaseExtender === undefined) return Promise.resolve();
    return this.leaseExtender({ stream: entry.binding.stream, group: entry.binding.group, id: entry.id }, ms);
  }

  /** What batch handlers use here: the single-entry paths' decode, ack, failure and lease steps, per entry. */
  private batchHost(): BatchHost {
    const { setup } = this;
    return {
      consumer: setup.consumer,
      decoder: setup.decoder,
      defaultDecoder: setup.defaultDecoder,
      logger: setup.logger,
      undecodable: async (entry, error) => {
        this.reportDecodeError(entry, error);
        await this.recovery?.deadLetterUndecodable(entry.binding.stream, entry.binding.group, entry.id, error);
        this.nack(entry);
      },
      processing: () => this.processing,
      finished: (entries) => this.dispatcher?.batchFinished(entries),
      succeeded: (entries) => this.settlement.ackAll(entries),
      failed: (entry, error) => {
        this.recovery?.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error);
        // With a retry policy the entry goes to the retry consumer for its backoff, as a single entry would.
        if (setup.isClosed() || !this.retries?.release(entry, error)) this.nack(entry);
      },
      extendLease: (entry) => this.extendLease(entry, undefined),
    };
  }

  // ---- handling one entry ----

  /**
   * Decodes and runs one entry. The usual path (default or raw format, a handler returning a
   * promise or a value) has no async function of its own: Nest's handler (guards, interceptors,
   * pipes, filters) is the only pipeline per entry.
   */
  private handle(entry: InFlightEntry): void {
    const { binding } = entry;
    const { defaultDecoder } = this.setup;
    let decoded: DecodedEntry;
    if (binding.raw) decoded = { data: entry.rawFields() };
    else if (defaultDecoder !== undefined) {
      try {
        // The default format reads its few fields straight from the reply: no field map per entry.
        const flat = entry.flatFields();
        decoded = flat !== undefined ? defaultDecoder.decodeFlat(flat) : defaultDecoder.decodeFields(entry);
      } catch (error) {
        void this.failDecode(entry, error);
        return;
      }
    } else {
      void this.decodeThenHandle(entry);
      return;
    }
    this.handleDecoded(entry, decoded);
  }

  private async decodeThenHandle(entry: InFlightEntry): Promise<void> {
    let decoded: DecodedEntry;
    try {
      const result = this.setup.decoder.deserialize(entry.fields, { stream: entry.binding.stream, id: entry.id });
      // A sync decoder costs no extra turn of the microtask queue.
      decoded = result instanceof Promise ? await result : result;
    } catch (error) {
      await this.failDecode(entry, error);
      return;
    }
    this.handleDecoded(entry, decoded);
  }

  private async failDecode(entry: InFlightEntry, error: unknown): Promise<void> {
    const { binding } = entry;
    this.reportDecodeError(entry, error);
    // Undecodable now means undecodable on every delivery: dead-letter it at once (the slot is
    // held until the move is done; if it fails, the entry stays pending).
    await this.recovery?.deadLetterUndecodable(binding.stream, binding.group, entry.id, error);
    this.finish(entry, false);
  }

  private handleDecoded(entry: InFlightEntry, decoded: DecodedEntry): void {
    if (this.telemetry !== undefined) {
      // The handler runs inside the entry's process span, so the user's own spans nest under it.
      this.telemetry.process(entry, decoded.headers, this.setup.consumer, () => this.runDecoded(entry, decoded));
      return;
    }
    this.runDecoded(entry, decoded);
  }

  private runDecoded(entry: InFlightEntry, decoded: DecodedEntry): void {
    const pattern = decoded.pattern ?? entry.binding.pattern;
    const context = new RedisStreamsContext(entry, this.setup.consumer, pattern, decoded.headers, this);
    if (this.processing !== undefined) {
      this.processing.run(
        entry,
        context,
        () => this.runInContext(entry, decoded, pattern, context, false),
        () => this.finish(entry, false),
      );
      return;
    }
    this.runInContext(entry, decoded, pattern, context, false);
  }

  private runInContext(entry: InFlightEntry, decoded: DecodedEntry, pattern: string, context: RedisStreamsContext, checked: boolean): void {
    const { binding } = entry;
    // Only a message binding answers. To an event binding (another group reading the same stream,
    // an audit trail) a request is an event: its handler gets the payload and nothing is replied.
    if (!binding.raw && !binding.isEventHandler && decoded.id !== undefined && decoded.replyTo !== undefined) {
      void handleRequest(this.requests as RequestHost, entry, decoded as DecodedRequest, pattern, context);
      return;
    }
    if (binding.idempotency !== undefined && !checked) {
      this.runIfNotProcessed(entry, decoded, context);
      return;
    }
    let result: unknown;
    try {
      result = binding.handler(decoded.data, context);
    } catch (error) {
      this.eventFailed(entry, error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value: unknown) => this.eventReturned(entry, value),
        (error: unknown) => this.eventFailed(entry, error),
      );
      return;
    }
    this.eventReturned(entry, result);
  }

  /** `extras.idempotency`: an entry whose key is recorded is acknowledged (in any ack mode) without running the handler. */
  private runIfNotProcessed(entry: InFlightEntry, decoded: DecodedEntry, context: RedisStreamsContext): void {
    (this.records as IdempotencyRecords).processed(entry, decoded.data, context).then(
      (processed) => {
        if (!processed) return this.runInContext(entry, decoded, context.getPattern(), context, true);
        this.setup.logger.debug?.(`entry ${entry.id} of "${entry.binding.stream}" was processed already (idempotency record): acknowledged without running the handler`);
        this.ackWithoutRunning(entry);
      },
      (error: unknown) => {
        this.setup.events.error(new Error(`idempotency check of entry ${entry.id} of "${entry.binding.stream}" failed; it stays pending: ${errorMessage(error)}`));
        this.finish(entry, false);
      },
    );
  }

  private eventReturned(entry: InFlightEntry, value: unknown): void {
    if (!isObservable(value)) {
      this.finish(entry, true);
      return;
    }
    lastValueFrom(value, { defaultValue: undefined }).then(
      () => this.finish(entry, true),
      (error: unknown) => this.eventFailed(entry, error),
    );
  }

  private eventFailed(entry: InFlightEntry, filtered: unknown): void {
    // The handler's own error, not the "Internal server error" Nest's exception filter made of it.
    const error = entry.handlerError ?? filtered;
    this.reportHandlerError(entry, error);
    // With a retry policy the entry goes to the retry consumer for its backoff (its slot comes back then).
    if (!this.setup.isClosed() && this.retries?.release(entry, error)) {
      this.telemetry?.finished(entry, false);
      this.processing?.end(entry);
      this.dispatcher?.finished(entry);
    } else this.finish(entry, false);
  }

  /** An entry acked in any ack mode without its handler's verdict (already processed, or nothing here answers it). */
  private ackWithoutRunning(entry: InFlightEntry): void {
    this.dispatcher?.finished(entry);
    this.telemetry?.finished(entry, true);
    this.processing?.end(entry);
    void this.ack(entry);
  }

  /** Handler slot back; then ack (auto mode, success), release (failure) or wait for ack()/nack() (manual). */
  private finish(entry: InFlightEntry, succeeded: boolean): void {
    this.dispatcher?.finished(entry);
    this.telemetry?.finished(entry, succeeded);
    this.processing?.end(entry);
    if (entry.settled) return;
    if (!succeeded || this.setup.isClosed()) {
      entry.settled = true;
      this.dispatcher?.release(entry);
      return;
    }
    if (entry.binding.ackMode === 'auto') void this.ack(entry);
  }

  private reportDecodeError(entry: InFlightEntry, error: unknown): void {
    const decodeError =
      error instanceof RedisStreamsDecodeError
        ? error
        : new RedisStreamsDecodeError(entry.binding.stream, entry.id, errorMessage(error));
    this.setup.logger.error(`${decodeError.message}; moving it to the dead-letter stream`);
    this.setup.events.emit('decodeError', decodeError);
  }

  private reportHandlerError(entry: InFlightEntry, error: unknown): void {
    const { binding } = entry;
    const detail = error instanceof Error ? error.message : safeJson(error);
    this.telemetry?.failed(entry, error);
    this.recovery?.recordHandlerError(binding.stream, binding.group, entry.id, error);
    this.setup.logger.error(
      `handler of "${binding.pattern}" failed on entry ${entry.id} of "${binding.stream}" (group "${binding.group}", delivery ${entry.deliveryCount}); it stays pending: ${detail}`,
    );
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
