import type { Logger } from '@nestjs/common';
import { isObservable } from 'rxjs';
import type { DecodedEntry } from '../codec/stream-deserializer.js';
import { errorMessage } from '../error-message.js';
import { RedisStreamsDecodeError } from '../errors.js';
import type { LeaseExtender } from '../recovery/recovery-host.js';
import type { RecoveryScheduler } from '../recovery/recovery-scheduler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { AckBatcher } from './ack-batcher.js';
import type { DeliveryAborts } from '../lifecycle/delivery-abort.js';
import { runBatch, type BatchHost } from './batch/batch-runner.js';
import { RedisStreamsContext, type EntrySettler } from './context.js';
import { RedisStreamsOptionError } from '../errors.js';
import type { SharedRateLimit, TokenGrant } from '../flow/shared-rate-limit.js';
import { describe } from '../validation.js';
import type { EntryRunner, HandlerLanes } from './handler-lanes.js';
import type { IdempotencyRecords } from './idempotency.js';
import type { EntryDecoders, InFlightEntry } from './in-flight.js';
import type { PrefetchSlots } from './prefetch-slots.js';
import type { ProcessingHooks } from './processing-hooks.js';
import { handleRequest } from './request-handling.js';
import type { DecodedRequest, RequestHost } from './request-replies.js';
import type { RetryReleaser } from './retry-releaser.js';
import { KeyHolds } from './key-holds.js';
import { StartTokens } from './start-tokens.js';
import { followObservable, RunningStreams } from './running-streams.js';
import type { ServerEventEmitter } from './server-events.js';
import type { LifecycleWriter } from '../lifecycle/lifecycle-writer.js';

/** What may be set on a server at any time, before or after `listen()`; read where it is used. */
export interface HandlingHooks {
  /** Nest's processing hooks, only once one is set: every per-entry step tests this one reference. */
  processing: ProcessingHooks | undefined;
  /** Installed by recovery to make `ctx.extendLease()` renew idle times. */
  leaseExtender: LeaseExtender | undefined;
}

/** Everything entry handling works with, built together at `listen()` (server-parts.ts). */
export interface EntryHandlingParts {
  readonly consumer: string;
  readonly decoders: EntryDecoders;
  readonly logger: Logger;
  readonly events: ServerEventEmitter;
  /** The server is closed: nothing is acked any more, a failed entry is not handed to retries. */
  readonly isClosed: () => boolean;
  readonly hooks: HandlingHooks;
  readonly slots: PrefetchSlots;
  readonly lanes: HandlerLanes;
  readonly acker: AckBatcher;
  readonly retries: RetryReleaser;
  readonly records: IdempotencyRecords;
  readonly recovery: RecoveryScheduler;
  /** Set only when OpenTelemetry is there and on: every per-entry hook tests this one reference. */
  readonly telemetry: Telemetry | undefined;
  /** What answering a request needs besides the settling done here. */
  readonly requests: Pick<RequestHost, 'replies' | 'handlerFor' | 'serialize'>;
  /** The running deliveries' `ctx.signal`s and time limits (only those used). */
  readonly aborts: DeliveryAborts;
  /** Writes `ctx.progress` reports and kept results. */
  readonly lifecycle: LifecycleWriter;
}

/**
 * One entry from its start to its settlement: decode, run the handler (a request through
 * request-handling.ts), then ack (queued in the ack batch; the slot comes back when its XACK was
 * answered), release (failure: it stays pending) or hand it to the retry consumer. Settlement
 * happens once: a later ack or nack of a settled entry is a no-op (a second `ack()` returns the
 * first one's outcome). The lanes start entries here (`EntryRunner`); a context's `ack()`,
 * `nack()` and `extendLease()` land here (`EntrySettler`).
 */
export class EntryHandling implements EntryRunner, EntrySettler {
  private readonly consumer: string;
  private readonly decoders: EntryDecoders;
  private readonly logger: Logger;
  private readonly events: ServerEventEmitter;
  private readonly isClosed: () => boolean;
  private readonly hooks: HandlingHooks;
  private readonly slots: PrefetchSlots;
  private readonly lanes: HandlerLanes;
  private readonly acker: AckBatcher;
  private readonly retries: RetryReleaser;
  private readonly records: IdempotencyRecords;
  private readonly recovery: RecoveryScheduler;
  private readonly telemetry: Telemetry | undefined;
  private readonly requests: RequestHost;
  private batches: BatchHost | undefined;
  /** The running deliveries' `ctx.signal`s and time limits (shutdown, lost leases and cancels abort them). */
  readonly aborts: DeliveryAborts;
  private readonly lifecycle: LifecycleWriter;
  /** The handlers' Observables running (streamed replies, events): close() abandons those left after shutdownTimeout. */
  readonly streams = new RunningStreams();
  /** Entries waiting here for a token (a per-key rate limit where recovery does not run, or a fresh start token): close() stops and hands them back. */
  readonly keyHolds = new KeyHolds();
  /** Fresh start tokens of entries whose read's tokens went stale: one take per turn. */
  private readonly startTokens = new StartTokens();

  constructor(parts: EntryHandlingParts) {
    ({
      consumer: this.consumer,
      decoders: this.decoders,
      logger: this.logger,
      events: this.events,
      isClosed: this.isClosed,
      hooks: this.hooks,
      slots: this.slots,
      lanes: this.lanes,
      acker: this.acker,
      retries: this.retries,
      records: this.records,
      recovery: this.recovery,
      telemetry: this.telemetry,
      aborts: this.aborts,
      lifecycle: this.lifecycle,
    } = parts);
    this.requests = {
      ...parts.requests,
      telemetry: parts.telemetry,
      streams: this.streams,
      recordHandlerError: (entry, error) => this.recovery.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error),
      emitError: (error) => this.events.error(error),
      finish: (entry, succeeded) => this.finish(entry, succeeded),
      ackUnanswerable: (entry) => this.ackWithoutRunning(entry),
    };
  }

  /** The lanes' start of an entry: decoded and run (see `handle`). */
  start(entry: InFlightEntry): void {
    if (entry.needsStartToken) {
      this.startOnFreshToken(entry);
      return;
    }
    let decoded: DecodedEntry | Promise<DecodedEntry>;
    try {
      decoded = entry.decode(this.decoders);
    } catch (error) {
      void this.failDecode(entry, error);
      return;
    }
    if (decoded instanceof Promise) void this.decodeThenHandle(entry, decoded);
    else this.handle(entry, decoded);
  }

  /**
   * An entry of a rate-limited read that waited for a handler until its read's token went stale
   * and back (start-tokens.ts): it takes a fresh token before it starts, or is held as an entry of
   * a per-key limit is (`takeTokenOrHold`).
   */
  private startOnFreshToken(entry: InFlightEntry): void {
    const rate = entry.binding.limits?.rate as SharedRateLimit;
    this.takeTokenOrHold(entry, rate, undefined, this.startTokens.take(rate), () => {
      entry.needsStartToken = false;
      this.start(entry);
    }, () => this.start(entry));
  }

  /**
   * close(): the entries waiting here for their key's token, none of which started, for the
   * handoff. They stop counting as running, so close() does not wait for them.
   */
  takeHeldEntries(): InFlightEntry[] {
    const held = this.keyHolds.takeAll();
    for (const entry of held) this.lanes.finished(entry);
    return held;
  }

  /** The lanes' start of a batch binding's batch (`extras.batch`): batch/batch-runner.ts runs and settles it. */
  startBatch(entries: InFlightEntry[]): void {
    this.batches ??= this.batchHost();
    runBatch(this.batches, entries);
  }

  // ---- EntrySettler (RedisStreamsContext) ----

  ack(entry: InFlightEntry): Promise<void> {
    if (entry.settled) return entry.acked ?? Promise.resolve();
    if (this.isClosed()) {
      const error = new Error(`cannot ack entry ${entry.id} of "${entry.binding.stream}": the server is closed; it stays pending`);
      this.logger.warn(error.message);
      return handledRejection(error);
    }
    entry.settled = true;
    this.slots.markReturning(entry);
    this.telemetry?.acked(entry.binding.stream, entry.binding.group);
    entry.acked = this.acker.add(entry);
    return entry.acked;
  }

  /** `ack` of a batch handler's entries (one binding): one promise, one add to the ack batch; left pending once closed. */
  private ackAll(entries: readonly InFlightEntry[]): void {
    if (this.isClosed()) {
      for (const entry of entries) this.nack(entry);
      return;
    }
    const unsettled = entries.every((entry) => !entry.settled) ? entries : entries.filter((entry) => !entry.settled);
    if (unsettled.length === 0) return;
    const { slots, telemetry } = this;
    for (const entry of unsettled) {
      entry.settled = true;
      slots.markReturning(entry);
    }
    const { stream, group } = (unsettled[0] as InFlightEntry).binding;
    telemetry?.acked(stream, group, unsettled.length);
    const acked = this.acker.addAll((unsettled[0] as InFlightEntry).binding, unsettled);
    for (const entry of unsettled) entry.acked = acked;
  }

  /**
   * `delayMs` (`ctx.nack({ delay })`): released to the retry consumer with that wait, like a failed
   * entry under a retry policy, and recovery ticks cover the stream's retries from now on. Where
   * recovery does not run for the handler (`recovery: false`, server-wide or in its extras) or the
   * server is closing, it stays pending here as a plain nack (warned: it comes back after
   * `minIdleTime` or a restart).
   */
  nack(entry: InFlightEntry, delayMs?: number): void {
    if (entry.settled) return;
    if (delayMs !== undefined) {
      const { stream, group } = entry.binding;
      if (!this.isClosed() && this.retries.releaseAfter(entry, delayMs, `nacked with a delay of ${delayMs} ms`)) {
        this.recovery.retryAfterNack(stream, group, delayMs);
        return;
      }
      this.logger.warn(
        `nack of entry ${entry.id} of "${stream}" (group "${group}") with a delay: ${this.isClosed() ? 'the server is closing' : 'recovery does not run for this handler (recovery: false)'}; it stays pending here instead`,
      );
    }
    // Stays pending; the slot is free at once.
    entry.settled = true;
    this.slots.release(entry);
  }

  async rateLimited(entry: InFlightEntry, ms: number): Promise<void> {
    const { binding } = entry;
    // A per-key limit backs off the entry's key only: other tenants go on.
    const rate = binding.limits?.rate ?? binding.limits?.perKey;
    if (rate === undefined) {
      throw new RedisStreamsOptionError(
        `extras.rateLimit (handler "${binding.pattern}")`,
        'is needed by ctx.rateLimited(): the back-off is kept in the group\'s shared rate limit',
      );
    }
    // The back-off first: a nack alone would let the next entry hit the API at once.
    try {
      await rate.backOff(ms, entry.rateKey);
    } finally {
      this.nack(entry, ms);
    }
  }

  progress(entry: InFlightEntry, value: unknown): Promise<void> {
    return (entry.progress ??= this.lifecycle.progressOf(entry)).report(value);
  }

  signal(entry: InFlightEntry): AbortSignal {
    return (entry.abort ??= this.aborts.create([entry])).signal;
  }

  extendLease(entry: InFlightEntry, ms: number | undefined): Promise<void> {
    const extender = this.hooks.leaseExtender;
    if (extender === undefined) return Promise.resolve();
    return extender({ stream: entry.binding.stream, group: entry.binding.group, id: entry.id }, ms);
  }

  /** What batch handlers use here: the single-entry paths' decode, ack, failure and lease steps, per entry. */
  private batchHost(): BatchHost {
    return {
      consumer: this.consumer,
      decoders: this.decoders,
      logger: this.logger,
      telemetry: this.telemetry,
      undecodable: async (entry, error) => {
        this.reportDecodeError(entry, error);
        await this.recovery.deadLetterUndecodable(entry.binding.stream, entry.binding.group, entry.id, error);
        this.nack(entry);
      },
      processing: () => this.hooks.processing,
      streams: this.streams,
      leavePending: (entry) => this.nack(entry),
      finished: (entries) => this.lanes.batchFinished(entries),
      succeeded: (entries) => this.ackAll(entries),
      failed: (entry, error, delayMs) => {
        this.recovery.recordHandlerError(entry.binding.stream, entry.binding.group, entry.id, error);
        // `ctx.fail(i, error, { delay })`: back after that wait, as a single entry's `ctx.nack({ delay })`.
        if (delayMs !== undefined) this.nack(entry, delayMs);
        // With a retry policy the entry goes to the retry consumer for its backoff, as a single entry would.
        else if (this.isClosed() || !this.retries.release(entry, error)) this.nack(entry);
      },
      extendLease: (entry) => this.extendLease(entry, undefined),
      aborts: this.aborts,
    };
  }

  // ---- handling one entry ----

  /** A decoder that returned a promise: its entry runs once it settled. */
  private async decodeThenHandle(entry: InFlightEntry, decoding: Promise<DecodedEntry>): Promise<void> {
    let decoded: DecodedEntry;
    try {
      decoded = await decoding;
    } catch (error) {
      await this.failDecode(entry, error);
      return;
    }
    this.handle(entry, decoded);
  }

  private async failDecode(entry: InFlightEntry, error: unknown): Promise<void> {
    const { binding } = entry;
    this.reportDecodeError(entry, error);
    // Undecodable now means undecodable on every delivery: dead-letter it at once (the slot is
    // held until the move is done; if it fails, the entry stays pending).
    await this.recovery.deadLetterUndecodable(binding.stream, binding.group, entry.id, error);
    this.finish(entry, false);
  }

  /**
   * Runs one decoded entry. The usual path (default or raw format, a handler returning a promise
   * or a value) has no async function of its own: Nest's handler (guards, interceptors, pipes,
   * filters) is the only pipeline per entry.
   */
  private handle(entry: InFlightEntry, decoded: DecodedEntry): void {
    if (entry.rateKey === undefined && entry.binding.limits?.perKey !== undefined) {
      this.handleWithinKeyLimit(entry, decoded, entry.binding.limits.perKey);
      return;
    }
    if (this.telemetry !== undefined) {
      // The handler runs inside the entry's process span, so the user's own spans nest under it.
      this.telemetry.process(entry, decoded.headers, this.consumer, () => this.runDecoded(entry, decoded));
      return;
    }
    this.runDecoded(entry, decoded);
  }

  /**
   * A per-key rate limit (`extras.rateLimit.key`): the entry's key, then a token of that key's
   * bucket; with one the entry runs (`handle` again, its key now set). Without, it is held: released
   * to the retry consumer until the key has a token, its delivery count set back (no delivery
   * counted), so it neither runs nor holds a slot here meanwhile. Where recovery does not run for
   * the handler it waits here instead, keeping its slots (key-holds.ts: close() stops the wait and
   * hands the entry back). Nothing of telemetry or the processing hooks starts for a held entry:
   * it did not run, and once close() began it does not start.
   */
  private handleWithinKeyLimit(entry: InFlightEntry, decoded: DecodedEntry, perKey: SharedRateLimit): void {
    const { binding } = entry;
    let key: unknown;
    try {
      key = perKey.limit.key?.(decoded.data, new RedisStreamsContext(entry, this.consumer, decoded.pattern ?? binding.pattern, decoded.headers, this));
    } catch (error) {
      this.eventFailed(entry, error);
      return;
    }
    if (typeof key !== 'string' || key === '') {
      this.eventFailed(entry, new Error(`extras.rateLimit.key of handler "${binding.pattern}" must return a non-empty string, returned ${describe(key)}`));
      return;
    }
    const tenant = key;
    this.takeTokenOrHold(entry, perKey, tenant, perKey.take(1, tenant), () => {
      entry.rateKey = tenant;
      this.handle(entry, decoded);
    }, () => this.handleWithinKeyLimit(entry, decoded, perKey));
  }

  /**
   * The one step of an entry that needs a token before it starts (`tenant`: of its key's bucket, a
   * per-key limit; none: a fresh token of the handler's bucket). With one it `proceed`s. Without, it
   * is held: released to the retry consumer until there is one, its delivery count set back (no
   * delivery counted), so it neither runs nor holds a slot here meanwhile; where recovery does not
   * run for the handler it waits here instead, keeping its slots (key-holds.ts: close() stops the
   * wait and hands the entry back), then `askAgain`. Nothing of telemetry or the processing hooks
   * starts for a held entry: it did not run, and once close() began it does not start. A failed
   * ask leaves it pending, as a failed handler.
   */
  private takeTokenOrHold(entry: InFlightEntry, rate: SharedRateLimit, tenant: string | undefined, asked: Promise<TokenGrant>, proceed: () => void, askAgain: () => void): void {
    asked.then(
      ({ granted, waitMs }) => {
        if (granted > 0 && !this.keyHolds.stopped) {
          proceed();
          return;
        }
        // close() began while the token was asked for: the entry does not start, its token goes back.
        if (granted > 0) rate.refund(granted, tenant).catch(() => undefined);
        this.holdForToken(entry, rate, tenant, waitMs, askAgain);
      },
      (error: unknown) => {
        this.events.error(new Error(`${limitName(entry, tenant)} could not be read; entry ${entry.id} stays pending: ${errorMessage(error)}`));
        this.finish(entry, false);
      },
    );
  }

  private holdForToken(entry: InFlightEntry, rate: SharedRateLimit, tenant: string | undefined, waitMs: number, askAgain: () => void): void {
    const { stream, group } = entry.binding;
    if (this.isClosed()) {
      this.finish(entry, false);
      return;
    }
    // Spread over one period: held entries all told the same wait would come back together, one
    // would win and the rest be held again, a claim and a release each.
    const holdMs = waitMs + Math.floor(Math.random() * rate.limit.perMs);
    if (this.retries.holdUncounted(entry, holdMs, `${limitName(entry, tenant)}: no token for ${waitMs} ms`)) {
      this.recovery.retryAfterNack(stream, group, holdMs);
      this.lanes.finished(entry);
      return;
    }
    // Recovery does not run for it: it waits here. Refused once close() handed the held ones back: it stays pending.
    if (!this.keyHolds.hold(entry, waitMs, askAgain)) this.finish(entry, false);
  }

  private runDecoded(entry: InFlightEntry, decoded: DecodedEntry): void {
    const pattern = decoded.pattern ?? entry.binding.pattern;
    const context = new RedisStreamsContext(entry, this.consumer, pattern, decoded.headers, this);
    const { processing } = this.hooks;
    if (processing !== undefined) {
      processing.run(
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
    if (binding.timeout !== undefined) {
      (entry.abort ??= this.aborts.create([entry])).startDeadline(binding.timeout, (error) => this.handlerFailed(entry, error));
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
    this.records.processed(entry, decoded.data, context).then(
      (processed) => {
        if (!processed) return this.runInContext(entry, decoded, context.getPattern(), context, true);
        this.logger.debug?.(`entry ${entry.id} of "${entry.binding.stream}" was processed already (idempotency record): acknowledged without running the handler`);
        this.ackWithoutRunning(entry);
      },
      (error: unknown) => {
        this.events.error(new Error(`idempotency check of entry ${entry.id} of "${entry.binding.stream}" failed; it stays pending: ${errorMessage(error)}`));
        this.finish(entry, false);
      },
    );
  }

  private eventReturned(entry: InFlightEntry, value: unknown): void {
    // Past its time limit the delivery was settled already: the handler's own outcome is ignored.
    if (entry.abort?.isLate('returned')) return;
    if (!isObservable(value)) {
      if (entry.progress !== undefined || entry.binding.keepResults !== undefined) this.recordOutcome(entry, { value });
      this.finish(entry, true);
      return;
    }
    followObservable(this.streams, value, {
      completed: () => entry.abort?.isLate('returned') || this.finishObserved(entry),
      failed: (error) => this.eventFailed(entry, error),
      abandoned: () => entry.abort?.isLate('failed') || this.finish(entry, false),
    });
  }

  private eventFailed(entry: InFlightEntry, filtered: unknown): void {
    if (entry.abort?.isLate('failed')) return;
    // The handler's own error, not the "Internal server error" Nest's exception filter made of it.
    this.handlerFailed(entry, entry.handlerError ?? filtered);
  }

  private finishObserved(entry: InFlightEntry): void {
    if (entry.progress !== undefined || entry.binding.keepResults !== undefined) this.recordOutcome(entry, { value: undefined });
    this.finish(entry, true);
  }

  /** The delivery's last progress report, then its kept result or settlement notice (each written once, failures logged). */
  private recordOutcome(entry: InFlightEntry, outcome: { value: unknown } | { error: unknown }): void {
    void this.lifecycle.settled(entry, entry.progress, outcome);
  }

  /** A failed delivery (the handler's error, or its time limit): reported, then released for its retry or left pending. */
  private handlerFailed(entry: InFlightEntry, error: unknown): void {
    if (entry.progress !== undefined || entry.binding.keepResults !== undefined) this.recordOutcome(entry, { error });
    this.reportHandlerError(entry, error);
    // With a retry policy the entry goes to the retry consumer for its backoff (its slot comes back then).
    if (!this.isClosed() && this.retries.release(entry, error)) {
      entry.abort?.end();
      this.telemetry?.finished(entry, false);
      this.hooks.processing?.end(entry);
      this.lanes.finished(entry);
    } else this.finish(entry, false);
  }

  /** An entry acked in any ack mode without its handler's verdict (already processed, or nothing here answers it). */
  private ackWithoutRunning(entry: InFlightEntry): void {
    entry.abort?.end();
    this.lanes.finished(entry);
    this.telemetry?.finished(entry, true);
    this.hooks.processing?.end(entry);
    void this.ack(entry);
  }

  /** Handler slot back; then ack (auto mode, success), release (failure) or wait for ack()/nack() (manual). */
  private finish(entry: InFlightEntry, succeeded: boolean): void {
    entry.abort?.end();
    this.lanes.finished(entry);
    this.telemetry?.finished(entry, succeeded);
    this.hooks.processing?.end(entry);
    if (entry.settled) return;
    if (!succeeded || this.isClosed()) {
      entry.settled = true;
      this.slots.release(entry);
      return;
    }
    if (entry.binding.ackMode === 'auto') void this.ack(entry);
  }

  private reportDecodeError(entry: InFlightEntry, error: unknown): void {
    const decodeError =
      error instanceof RedisStreamsDecodeError
        ? error
        : new RedisStreamsDecodeError(entry.binding.stream, entry.id, errorMessage(error));
    this.logger.error(`${decodeError.message}; moving it to the dead-letter stream`);
    this.events.emit('decodeError', decodeError);
  }

  private reportHandlerError(entry: InFlightEntry, error: unknown): void {
    const { binding } = entry;
    const detail = error instanceof Error ? error.message : safeJson(error);
    this.telemetry?.failed(entry, error);
    this.recovery.recordHandlerError(binding.stream, binding.group, entry.id, error);
    this.logger.error(
      `handler of "${binding.pattern}" failed on entry ${entry.id} of "${binding.stream}" (group "${binding.group}", delivery ${entry.deliveryCount}); it stays pending: ${detail}`,
    );
  }
}

/** A rejected promise that is no unhandled rejection when its caller does not await it. */
function handledRejection(error: Error): Promise<never> {
  const rejected = Promise.reject(error);
  rejected.catch(() => undefined);
  return rejected;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The limit an entry waits on, for messages: its key's bucket (a per-key limit) or its handler's. */
function limitName(entry: InFlightEntry, tenant: string | undefined): string {
  return tenant === undefined ? `rate limit of handler "${entry.binding.pattern}"` : `rate limit of key "${tenant}" (handler "${entry.binding.pattern}")`;
}
