/**
 * Lets `stop()` cut short the promises a loop awaits: ioredis keeps a command that was in
 * flight when its socket closed for a resend after reconnect, and never settles it when the
 * connection is dropped for good. `wrap(promise)` settles like `promise`, or rejects with the
 * reason of `abort()`, whichever comes first.
 *
 * Not `Promise.race` against one long-lived promise: every race would hang a reaction (holding
 * the awaited reply) on that promise until the abort, a leak of every reply ever read.
 */
export class Abortable {
  private reason: Error | undefined;
  private readonly rejecters = new Set<(reason: Error) => void>();

  wrap<T>(promise: Promise<T>): Promise<T> {
    if (this.reason !== undefined) {
      // Refused, the promise is abandoned: its own failure later ("Connection is closed") is expected, not unhandled.
      promise.catch(ignoreAbandoned);
      return Promise.reject(this.reason);
    }
    return new Promise<T>((resolve, reject) => {
      this.rejecters.add(reject);
      promise.then(
        (value) => {
          this.rejecters.delete(reject);
          resolve(value);
        },
        (error: unknown) => {
          this.rejecters.delete(reject);
          reject(error);
        },
      );
    });
  }

  /** Rejects every wrapped promise still pending, and every later `wrap`, with `reason`. */
  abort(reason: Error): void {
    this.reason = reason;
    for (const reject of this.rejecters) reject(reason);
    this.rejecters.clear();
  }
}

function ignoreAbandoned(): void {
  // nobody awaits an abandoned promise any more
}
