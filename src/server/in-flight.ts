import type { StreamFields } from '../codec/wire-format.js';
import type { StreamBinding } from './handler-binding.js';

/** An entry as read or claimed, before it enters the dispatcher. */
export interface IncomingEntry {
  readonly id: string;
  readonly fields: StreamFields;
  /** 1 for a fresh read (`>`); the count Redis reports for re-reads and claims. */
  readonly deliveryCount: number;
}

/** Queued: waiting for a handler slot. Running: its handler runs. Finished: handler done, waiting
 * for an ack or nack (manual mode) or for the ack batch to flush. */
export const EntryState = { Queued: 0, Running: 1, Finished: 2 } as const;
export type EntryState = (typeof EntryState)[keyof typeof EntryState];

/**
 * An entry this consumer fetched and has not yet acked, nacked or handed back. One registry keyed
 * by stream + group + id holds them all, whatever source (read, own-PEL re-read, claim) fetched them.
 */
export interface InFlightEntry extends IncomingEntry {
  readonly binding: StreamBinding;
  /** `binding.key` + NUL + id. */
  readonly key: string;
  state: EntryState;
  /** An ack or nack was requested (or done): later ack/nack calls are no-ops. */
  settled: boolean;
}
