import type { DeadLetterNotice } from './recovery-events.js';

/** One `@OnDeadLetter()` method, bound to its instance. */
export interface DeadLetterListener {
  readonly pattern: string | undefined;
  /** `Class.method`, for the log when it throws. */
  readonly name: string;
  readonly call: (letter: DeadLetterNotice) => unknown;
}

/**
 * `@OnDeadLetter()` methods of the Nest apps running in this process, registered at module init and
 * removed at module destroy. Process-wide like the recovery registry: a server strategy is usually
 * built outside Nest's container, so the servers cannot be told apart by app.
 */
export const deadLetterListeners = new Set<DeadLetterListener>();

/** The listeners that want a dead letter of `stream`, read for handler `patterns`. */
export function listenersFor(stream: string, patterns: readonly string[]): DeadLetterListener[] {
  const wanted: DeadLetterListener[] = [];
  for (const listener of deadLetterListeners) {
    if (listener.pattern === undefined || listener.pattern === stream || patterns.includes(listener.pattern)) wanted.push(listener);
  }
  return wanted;
}
