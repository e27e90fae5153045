import type { Logger } from '@nestjs/common';
import type { RedisStreamsDecodeError } from '../errors.js';
import type { Redactor } from '../redaction.js';
import type { DeadLetterNotice, EntriesLostNotice, LeaseLostNotice, RecoveredNotice } from '../recovery/recovery-events.js';
import { errorMessage } from '../error-message.js';

/** Events of `server.on(event, callback)`. */
export type RedisStreamsServerEvents = {
  /** A connection, read, ack or reply failed (the server goes on). */
  error: (error: Error) => void;
  /** An entry could not be decoded; it is moved to the dead-letter stream (reason `decode_error`). */
  decodeError: (error: RedisStreamsDecodeError) => void;
  /** A group (and maybe its stream) was missing and was created again at `0`. */
  groupRecreated: (info: { stream: string; group: string }) => void;
  /** Entries handed back on close. */
  handoff: (info: { count: number; consumer: string }) => void;
  /** Recovery claimed idle entries and handed them to the handlers. */
  recovered: (info: RecoveredNotice) => void;
  /** An entry was moved to the dead-letter stream (max deliveries, decode error, trimmed tombstone). */
  deadLetter: (letter: DeadLetterNotice) => void;
  /** Entries trimmed or deleted before they were handled (never silent). */
  entriesLost: (info: EntriesLostNotice) => void;
  /** A lease renewal found an in-flight entry taken by another consumer (or gone). */
  leaseLost: (info: LeaseLostNotice) => void;
};

type Listener = (...args: unknown[]) => void;

/**
 * The server's listeners. Every payload passes the redactor first (no password reaches user
 * code), and a listener that throws is logged without keeping the others from their event.
 */
export class ServerEventEmitter {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly logger: Logger,
    private readonly redactor: Redactor,
  ) {}

  on(event: string, callback: Listener): void {
    let set = this.listeners.get(event);
    if (set === undefined) this.listeners.set(event, (set = new Set()));
    set.add(callback);
  }

  emit(event: string, ...args: unknown[]): void {
    const set = this.listeners.get(event);
    if (set === undefined) return;
    for (const listener of set) {
      try {
        listener(...args.map(this.redactor.value));
      } catch (error) {
        this.logger.error(`listener of "${event}" threw: ${errorMessage(error)}`);
      }
    }
  }

  /** Logs `error` and emits it as `error`: the server goes on. */
  error(error: Error): void {
    this.logger.error(error.message);
    this.emit('error', error);
  }
}
