import type { Logger } from '@nestjs/common';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { AckBatcher } from './ack-batcher.js';
import type { Dispatcher } from './dispatcher.js';
import type { InFlightEntry } from './in-flight.js';

/**
 * An entry's settlement, once: `ack` (queued in the ack batch; the slot comes back when its XACK
 * was answered) or `nack` (stays pending; the slot is free at once). A later ack or nack of a
 * settled entry is a no-op (a second `ack()` returns the first one's outcome).
 */
export class AckSettlement {
  private dispatcher: Dispatcher | undefined;
  private acker: AckBatcher | undefined;
  private telemetry: Telemetry | undefined;

  constructor(
    private readonly logger: Logger,
    /** The server is closed: nothing is acked any more. */
    private readonly isClosed: () => boolean,
  ) {}

  /** At `listen()`, once the parts exist. */
  wire(dispatcher: Dispatcher, acker: AckBatcher, telemetry: Telemetry | undefined): void {
    this.dispatcher = dispatcher;
    this.acker = acker;
    this.telemetry = telemetry;
  }

  ack(entry: InFlightEntry): Promise<void> {
    if (entry.settled) return entry.acked ?? Promise.resolve();
    if (this.acker === undefined || this.isClosed()) {
      const error = new Error(`cannot ack entry ${entry.id} of "${entry.binding.stream}": the server is closed; it stays pending`);
      this.logger.warn(error.message);
      return handledRejection(error);
    }
    entry.settled = true;
    this.dispatcher?.markReturning(entry);
    this.telemetry?.acked(entry.binding.stream, entry.binding.group);
    entry.acked = this.acker.add(entry);
    return entry.acked;
  }

  /** `ack` of a batch handler's entries (one binding): one promise, one add to the ack batch; left pending once closed. */
  ackAll(entries: readonly InFlightEntry[]): void {
    if (this.acker === undefined || this.isClosed()) {
      for (const entry of entries) this.nack(entry);
      return;
    }
    const unsettled = entries.every((entry) => !entry.settled) ? entries : entries.filter((entry) => !entry.settled);
    if (unsettled.length === 0) return;
    const { dispatcher, telemetry } = this;
    for (const entry of unsettled) {
      entry.settled = true;
      dispatcher?.markReturning(entry);
      telemetry?.acked(entry.binding.stream, entry.binding.group);
    }
    const acked = this.acker.addAll((unsettled[0] as InFlightEntry).binding, unsettled);
    for (const entry of unsettled) entry.acked = acked;
  }

  nack(entry: InFlightEntry): void {
    if (entry.settled) return;
    entry.settled = true;
    this.dispatcher?.release(entry);
  }
}

/** A rejected promise that is no unhandled rejection when its caller does not await it. */
function handledRejection(error: Error): Promise<never> {
  const rejected = Promise.reject(error);
  rejected.catch(() => undefined);
  return rejected;
}
