import type { Logger } from '@nestjs/common';
import { isObservable } from 'rxjs';
import type { DecodedEntry } from '../../codec/stream-deserializer.js';
import { errorMessage } from '../../error-message.js';
import type { EntryDecoders, InFlightEntry } from '../in-flight.js';
import type { ProcessingHooks } from '../processing-hooks.js';
import { followObservable, type RunningStreams } from '../running-streams.js';
import type { Telemetry } from '../../telemetry/telemetry.js';
import type { DeliveryAborts } from '../../lifecycle/delivery-abort.js';
import { RedisStreamsBatchContext } from './batch-context.js';

/** What running a batch needs from the server. */
export interface BatchHost {
  readonly consumer: string;
  readonly decoders: EntryDecoders;
  readonly logger: Logger;
  /** Set only when OpenTelemetry is there and on: one span and one set of metric updates per batch. */
  readonly telemetry: Telemetry | undefined;
  /** Nest's processing hooks when one is set: they run once per batch, with its batch context. */
  processing(): ProcessingHooks | undefined;
  /** The handlers' Observables running: close() abandons a batch's that never completes. */
  readonly streams: RunningStreams;
  /** The entry stays pending, nothing recorded (close() gave up on its batch). */
  leavePending(entry: InFlightEntry): void;
  /** An undecodable entry: reported, dead-lettered (`decode_error`), then its slot is freed. */
  undecodable(entry: InFlightEntry, error: unknown): Promise<void>;
  /** The batch's handler slot is free again. */
  finished(entries: readonly InFlightEntry[]): void;
  /** The entries (of one binding) succeeded: acknowledged with the others of this tick (one XACK / XACKDEL per stream + group); left pending once closed. */
  succeeded(entries: readonly InFlightEntry[]): void;
  /** The entry failed: `error` is recorded for its dead letter; it stays pending (or goes to its retry; after `delayMs` when given). */
  failed(entry: InFlightEntry, error: unknown, delayMs?: number): void;
  extendLease(entry: InFlightEntry): Promise<void>;
  /** The running deliveries' `ctx.signal`s and time limits: one per batch. */
  readonly aborts: DeliveryAborts;
}

/**
 * Runs one batch of a batch binding: decodes every entry (an undecodable one is dead-lettered on
 * its own and left out), calls the handler once with the payloads and a `RedisStreamsBatchContext`,
 * then settles each entry: returned → acknowledged, except those marked with `ctx.fail()`; threw →
 * every entry stays pending with the batch's error (or the one it was marked with).
 */
export function runBatch(host: BatchHost, entries: InFlightEntry[]): void {
  const decoded: DecodedEntry[] = [];
  const good: InFlightEntry[] = [];
  let pending: Promise<DecodedEntry>[] | undefined;
  for (const entry of entries) {
    let result: DecodedEntry | Promise<DecodedEntry>;
    try {
      result = entry.decode(host.decoders);
    } catch (error) {
      void undecodable(host, entry, error);
      continue;
    }
    if (result instanceof Promise) (pending ??= []).push(result);
    good.push(entry);
    decoded.push(result as DecodedEntry);
  }
  if (pending === undefined) {
    run(host, entries, good, decoded);
    return;
  }
  // A decoder returning promises: wait for every entry of the batch, then run it.
  void Promise.allSettled(decoded.map((value) => Promise.resolve(value))).then((results) => {
    const decodedNow: DecodedEntry[] = [];
    const goodNow: InFlightEntry[] = [];
    results.forEach((result, i) => {
      const entry = good[i] as InFlightEntry;
      if (result.status === 'rejected') void undecodable(host, entry, result.reason);
      else {
        goodNow.push(entry);
        decodedNow.push(result.value);
      }
    });
    run(host, entries, goodNow, decodedNow);
  });
}

async function undecodable(host: BatchHost, entry: InFlightEntry, error: unknown): Promise<void> {
  try {
    await host.undecodable(entry, error);
  } catch (failure) {
    host.logger.error(`dead-lettering undecodable entry ${entry.id} failed; it stays pending: ${errorMessage(failure)}`);
  }
}

function run(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], decoded: DecodedEntry[]): void {
  if (good.length === 0) {
    host.finished(all);
    return;
  }
  const context = new RedisStreamsBatchContext(good, decoded, host.consumer, host);
  const payloads: unknown[] = [];
  for (const entry of decoded) payloads.push(entry.data);
  const { telemetry } = host;
  if (telemetry === undefined) {
    runWithHooks(host, all, good, context, payloads);
    return;
  }
  // The handler runs inside the batch's process span, so the user's own spans nest under it.
  telemetry.processBatch(
    context,
    good,
    decoded.map((entry) => entry.headers),
    host.consumer,
    () => runWithHooks(host, all, good, context, payloads),
  );
}

function runWithHooks(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], context: RedisStreamsBatchContext, payloads: unknown[]): void {
  const hooks = host.processing();
  if (hooks !== undefined) {
    hooks.run(
      context,
      context,
      () => callHandler(host, all, good, context, payloads),
      (error) => settle(host, all, good, context, { error }),
    );
    return;
  }
  callHandler(host, all, good, context, payloads);
}

function callHandler(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], context: RedisStreamsBatchContext, payloads: unknown[]): void {
  const { handler, timeout } = (good[0] as InFlightEntry).binding;
  // The batch's time limit: past it the batch fails as a whole, its handler's own outcome is ignored.
  if (timeout !== undefined) context.abortState().startDeadline(timeout, (error) => settleNow(host, all, good, context, { error }));
  let result: unknown;
  try {
    result = handler(payloads, context);
  } catch (error) {
    settle(host, all, good, context, { error });
    return;
  }
  if (result instanceof Promise) {
    result.then(
      (value: unknown) => returned(host, all, good, context, value),
      (error: unknown) => settle(host, all, good, context, { error }),
    );
    return;
  }
  returned(host, all, good, context, result);
}

function returned(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], context: RedisStreamsBatchContext, value: unknown): void {
  if (context.abort?.isLate('returned')) return;
  if (!isObservable(value)) {
    settle(host, all, good, context, undefined);
    return;
  }
  followObservable(host.streams, value, {
    completed: () => settle(host, all, good, context, undefined),
    failed: (error) => settle(host, all, good, context, { error }),
    abandoned: () => {
      if (context.abort?.isLate('failed')) return;
      context.abort?.end();
      host.telemetry?.finishedBatch(context, good.length);
      host.finished(all);
      host.processing()?.end(context);
      context.settle();
      for (const entry of good) host.leavePending(entry);
    },
  });
}

/** The handler's outcome: settled, unless its time limit passed before (then ignored, logged once). */
function settle(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], context: RedisStreamsBatchContext, failure: { error: unknown } | undefined): void {
  if (context.abort?.isLate(failure === undefined ? 'returned' : 'failed')) return;
  settleNow(host, all, good, context, failure);
}

/** `failure`: the handler threw (what reached us: Nest's filtered error; the context has the handler's own), or its time limit passed. */
function settleNow(host: BatchHost, all: InFlightEntry[], good: InFlightEntry[], context: RedisStreamsBatchContext, failure: { error: unknown } | undefined): void {
  context.abort?.end();
  host.finished(all);
  host.processing()?.end(context);
  const { thrown, failures, delays } = context.settle();
  const first = good[0] as InFlightEntry;
  const { binding } = first;
  const where = `a batch of ${good.length} entries of "${binding.stream}" (group "${binding.group}", ids ${first.id}…${(good[good.length - 1] as InFlightEntry).id})`;
  if (failure !== undefined) {
    const error = thrown ?? failure.error;
    host.telemetry?.finishedBatch(context, good.length, error ?? new Error('batch handler failed'));
    host.logger.error(`handler of "${binding.pattern}" failed on ${where}; they stay pending: ${describeError(error)}`);
    good.forEach((entry, i) => host.failed(entry, failures.has(i) ? failures.get(i) : error, delays.get(i)));
    return;
  }
  host.telemetry?.finishedBatch(context, failures.size);
  if (failures.size > 0) {
    host.logger.error(
      `handler of "${binding.pattern}" marked ${failures.size} of ${where} failed; they stay pending: ${[...failures.values()].map(describeError).join('; ')}`,
    );
  }
  if (failures.size === 0) {
    host.succeeded(good);
    return;
  }
  host.succeeded(good.filter((_, i) => !failures.has(i)));
  good.forEach((entry, i) => failures.has(i) && host.failed(entry, failures.get(i), delays.get(i)));
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
