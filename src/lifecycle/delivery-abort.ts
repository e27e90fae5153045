import type { Logger } from '@nestjs/common';

/**
 * Cancellation of a running delivery (one entry, or one batch of a batch handler): the handler's
 * `ctx.signal`, and its time limit (`extras.timeout`). Nothing of it exists for a delivery whose
 * handler neither reads `ctx.signal` nor has a time limit: the abort state and its
 * `AbortController` are made on first use, so a handler without either costs nothing per entry.
 */

/** Why a handler's `ctx.signal` aborted: its time limit passed, its lease was lost to another worker, the shutdown deadline passed, or an operator cancelled it. */
export type DeliveryAbortReason = 'timeout' | 'lease-lost' | 'shutdown' | 'cancelled';

/** The reason of an aborted `ctx.signal` (`signal.reason`): `reason` says why, the message tells it. */
export class RedisStreamsAbortError extends Error {
  override readonly name: string = 'RedisStreamsAbortError';

  constructor(
    readonly reason: DeliveryAbortReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A handler ran past its time limit (`extras.timeout`): the delivery failed with this error (it
 * follows the retry policy and `maxDeliveries` as any failure), and its `ctx.signal` aborted with it.
 */
export class RedisStreamsHandlerTimeoutError extends RedisStreamsAbortError {
  override readonly name = 'RedisStreamsHandlerTimeoutError';

  constructor(
    readonly timeoutMs: number,
    what: string,
  ) {
    super('timeout', `handler of ${what} did not finish within its time limit (extras.timeout ${timeoutMs} ms)`);
  }
}

/** The abort state of one delivery: its signal (made when read), its time limit's timer, and whether its outcome came too late. */
export class DeliveryAbort {
  private controller: AbortController | undefined;
  private reason: RedisStreamsAbortError | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The time limit passed: the delivery was settled as failed, the handler's own outcome is ignored. */
  private expired = false;
  private lateLogged = false;

  constructor(
    private readonly registry: DeliveryAborts,
    /** The registry's keys of the delivery's entries (one, or a batch's). */
    readonly keys: readonly string[],
    /** How logs name the delivery: `entry 1-0 of "orders" (group "g")`. */
    readonly what: string,
  ) {}

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.reason !== undefined && !this.controller.signal.aborted) this.controller.abort(this.reason);
    return this.controller.signal;
  }

  /** Aborts the signal (once: the first reason stays); a controller not made yet is made only when the signal is read. */
  abort(reason: RedisStreamsAbortError): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.controller?.abort(reason);
  }

  /** Starts the time limit: once `ms` passed, the signal aborts and `onExpiry` settles the delivery as failed with the timeout error. */
  startDeadline(ms: number, onExpiry: (error: RedisStreamsHandlerTimeoutError) => void): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.expired = true;
      const error = new RedisStreamsHandlerTimeoutError(ms, this.what);
      this.abort(error);
      this.registry.ended(this);
      onExpiry(error);
    }, ms);
    this.timer.unref();
  }

  /**
   * The handler's outcome came: `true` when its time limit passed before (the outcome is ignored,
   * logged once); `false` otherwise (the timer stops, the delivery settles as usual).
   */
  isLate(outcome: 'returned' | 'failed'): boolean {
    if (!this.expired) {
      this.end();
      return false;
    }
    if (!this.lateLogged) {
      this.lateLogged = true;
      this.registry.logger.warn(`handler of ${this.what} ${outcome} after its time limit: ignored, the delivery was settled as failed at the deadline`);
    }
    return true;
  }

  /** The delivery settled: no timer, no longer reachable by shutdown, lease-lost or cancel aborts. */
  end(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.registry.ended(this);
  }
}

/**
 * The server's running deliveries that have an abort state, by stream, group and entry id: what
 * the shutdown deadline, a lost lease and an operator's cancel abort. Holds only deliveries whose
 * handler read `ctx.signal` or has a time limit.
 */
export class DeliveryAborts {
  private readonly byKey = new Map<string, DeliveryAbort>();

  constructor(readonly logger: Logger) {}

  /** The abort state of a delivery, made and registered on first use. */
  create(entries: readonly { readonly binding: { readonly stream: string; readonly group: string }; readonly id: string }[]): DeliveryAbort {
    const first = entries[0] as (typeof entries)[number];
    const { stream, group } = first.binding;
    const what =
      entries.length === 1
        ? `entry ${first.id} of "${stream}" (group "${group}")`
        : `a batch of ${entries.length} entries of "${stream}" (group "${group}", ids ${first.id}…${(entries[entries.length - 1] as (typeof entries)[number]).id})`;
    const abort = new DeliveryAbort(
      this,
      entries.map((entry) => abortKey(entry.binding.stream, entry.binding.group, entry.id)),
      what,
    );
    for (const key of abort.keys) this.byKey.set(key, abort);
    return abort;
  }

  /** Aborts the running delivery of one entry; `false` when none here has an abort state. */
  abortEntry(stream: string, group: string, id: string, reason: RedisStreamsAbortError): boolean {
    const abort = this.byKey.get(abortKey(stream, group, id));
    if (abort === undefined) return false;
    abort.abort(reason);
    return true;
  }

  /** Whether a running delivery of the entry has an abort state here (someone to tell). */
  has(stream: string, group: string, id: string): boolean {
    return this.byKey.has(abortKey(stream, group, id));
  }

  /** Aborts every running delivery (the shutdown deadline passed). */
  abortAll(reason: RedisStreamsAbortError): void {
    for (const abort of new Set(this.byKey.values())) abort.abort(reason);
  }

  /** Deliveries registered now (tests, leaks). */
  get size(): number {
    return new Set(this.byKey.values()).size;
  }

  /** @internal */
  ended(abort: DeliveryAbort): void {
    for (const key of abort.keys) if (this.byKey.get(key) === abort) this.byKey.delete(key);
  }
}

function abortKey(stream: string, group: string, id: string): string {
  return `${stream}\u0000${group}\u0000${id}`;
}
