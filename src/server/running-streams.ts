import type { Observable, Subscription } from 'rxjs';

/** A streamed reply (streamed-reply.ts) or an event handler's Observable that close() can give up on. */
export interface AbandonableStream {
  /** Unsubscribed, nothing more is written, the entry stays pending; a write in flight ends first (the promise). */
  abandon(): Promise<void> | undefined;
}

/**
 * The Observables of handlers still running: streamed replies, and event handlers that returned
 * one. `close()` waits `shutdownTimeout` for them as for any handler; then it unsubscribes those
 * left (a never-completing Observable would else run on after close, and a streamed reply try to
 * reply on closed connections at its next value) and their entries stay pending.
 */
export class RunningStreams {
  private readonly running = new Set<AbandonableStream>();

  add(stream: AbandonableStream): void {
    this.running.add(stream);
  }

  delete(stream: AbandonableStream): void {
    this.running.delete(stream);
  }

  get size(): number {
    return this.running.size;
  }

  /** Abandons every running stream; resolves once the reply writes in flight ended (no write starts after). */
  async abandonAll(): Promise<void> {
    const writing: Promise<void>[] = [];
    for (const stream of this.running) {
      const stopped = stream.abandon();
      if (stopped !== undefined) writing.push(stopped);
    }
    this.running.clear();
    await Promise.all(writing);
  }
}

/** How an event handler's Observable ended: it completed, it errored, or close() gave up on it. */
export interface ObservableOutcome {
  completed(): void;
  failed(error: unknown): void;
  /** Unsubscribed by close() after shutdownTimeout: the entries stay pending. */
  abandoned(): void;
}

/**
 * Runs an event handler's Observable to its end (its values are ignored, as Nest does), tracked in
 * `running` so close() can unsubscribe one that never completes.
 */
export function followObservable(running: RunningStreams, source: Observable<unknown>, outcome: ObservableOutcome): void {
  let ended = false;
  let subscription: Subscription | undefined;
  const tracked: AbandonableStream = {
    abandon: () => {
      if (ended) return undefined;
      ended = true;
      subscription?.unsubscribe();
      outcome.abandoned();
      return undefined;
    },
  };
  const end = (then: () => void): void => {
    if (ended) return;
    ended = true;
    running.delete(tracked);
    then();
  };
  subscription = source.subscribe({ error: (error: unknown) => end(() => outcome.failed(error)), complete: () => end(() => outcome.completed()) });
  // Ended while subscribing (Nest wraps a handler's plain result in a synchronous Observable): nothing to track.
  if (!ended) running.add(tracked);
}
