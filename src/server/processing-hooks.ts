import type { Transport } from '@nestjs/microservices';
import { errorMessage } from '../error-message.js';

/** Nest 12's `Server#setOnProcessingStartHook` hook: `done()` runs the handling; tracing opens a span around it. */
export type ProcessingStartHook = (transportId: Transport | symbol, context: unknown, done: () => Promise<unknown>) => void;
/** Nest 12's `Server#setOnProcessingEndHook` hook: the handling of `context` ended. */
export type ProcessingEndHook = (transportId: Transport | symbol, context: unknown) => void;

/** What `done()` returns: the handling has started (the end hook says when it ended). */
const STARTED: Promise<void> = Promise.resolve();

/**
 * Nest's processing hooks around each handled entry (or batch), as Nest's own transports run
 * them (`Server#runWithProcessingHooks`): the start hook gets the context and a `done` that starts
 * the handler; the end hook runs exactly once when that handling ended. Only built once a hook is
 * set, so a server without hooks pays nothing per entry.
 */
export class ProcessingHooks {
  private startHook: ProcessingStartHook | undefined;
  private endHook: ProcessingEndHook | undefined;
  /** Handled entries (or batch contexts) whose end hook has not run yet → their context. */
  private readonly running = new Map<object, unknown>();

  constructor(
    private readonly transportId: () => Transport | symbol,
    private readonly reportError: (error: Error) => void,
  ) {}

  setStart(hook: ProcessingStartHook | undefined): void {
    this.startHook = hook;
  }

  setEnd(hook: ProcessingEndHook | undefined): void {
    this.endHook = hook;
  }

  /**
   * Runs `handle` inside the start hook. `key` is what `end(key)` is called with once the
   * handling ended. A start hook that throws (or rejects) before calling `done` never ran the
   * handler: `notRun` gets its error (the entry stays pending), and the end hook runs.
   */
  run(key: object, context: unknown, handle: () => void, notRun: (error: unknown) => void): void {
    this.running.set(key, context);
    const start = this.startHook;
    if (start === undefined) {
      handle();
      return;
    }
    let started = false;
    const done = (): Promise<void> => {
      if (!started) {
        started = true;
        handle();
      }
      return STARTED;
    };
    const failed = (error: unknown): void => {
      this.reportError(new Error(`processing start hook failed: ${errorMessage(error)}`));
      if (started) return;
      // Never run: done() must not start the handler any more, the span ends now.
      started = true;
      this.end(key);
      notRun(error);
    };
    try {
      const result: unknown = start(this.transportId(), context, done);
      if (result instanceof Promise) result.then(undefined, failed);
    } catch (error) {
      failed(error);
    }
  }

  /** The handling of `key` ended: the end hook runs, once (later calls for the same key do nothing). */
  end(key: object): void {
    if (!this.running.has(key)) return;
    const context = this.running.get(key);
    this.running.delete(key);
    try {
      this.endHook?.(this.transportId(), context);
    } catch (error) {
      this.reportError(new Error(`processing end hook failed: ${errorMessage(error)}`));
    }
  }
}
