import type { SharedRateLimit, TokenGrant } from '../flow/shared-rate-limit.js';
import { refundTokens } from './binding-limits.js';
import { EntryState, type InFlightEntry, type StreamBinding } from './in-flight.js';

/**
 * A rate-limit token serves a start only this share of the limit's `per` after it was taken, so no
 * entry starts on a token the bucket has had time to refill (busy handlers between).
 */
const FRESH_SHARE_OF_PER = 50;

/** How long a rate-limit token taken at some time serves a start: a fiftieth of the limit's `per`. */
export function freshTokenMs(rate: SharedRateLimit): number {
  return rate.limit.perMs / FRESH_SHARE_OF_PER;
}

/** A read whose entries were still queued when it was handed to the lanes: its entries by admission number. */
interface QueuedRead {
  /** performance.now() at which its tokens are no longer fresh. */
  readonly staleAt: number;
  readonly first: number;
  readonly last: number;
}

/**
 * Tokens count starts, but a rate-limited read (stream-reader.ts readLimited) takes its tokens
 * for a whole read (up to `readBatch`), and entries queued behind busy handlers start later. So
 * the entries of a read still waiting for a handler once its tokens are no longer fresh give
 * their tokens back (one refund for all of them) and each takes a fresh one when it starts
 * (`StartTokens`, asked by entry-handling.ts `startOnFreshToken`). Refunded when they go stale, not when the entry starts:
 * given back and taken again at once, the old token would count as spent back then. A batch
 * binding's entries are not tracked: a batch starts as one, when its gate says.
 *
 * A read is kept as its entries' admission numbers, not the entries: held by a timer for a
 * fiftieth of `per`, entries (and their replies) would outlive their handling and the young
 * generation, each then copied and promoted by the GC (most of the limited reader's extra CPU per
 * entry). One timer, for the oldest read whose entries are not all started: when it fires, the
 * reads whose entries all left the queue since are forgotten, so with reads every millisecond and
 * handlers keeping up it fires once per fresh window, not once per read.
 */
export class LateStarts {
  private readonly freshMs: number;
  /** Oldest first: reads are recorded in the order their tokens were taken. */
  private readonly reads: QueuedRead[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rate: SharedRateLimit,
    private readonly binding: StreamBinding,
  ) {
    this.freshMs = freshTokenMs(rate);
  }

  /**
   * A read's entries, `first` to `last`, just handed to the lanes, their tokens taken at `takenAt`
   * (performance.now()): those not started once the tokens are no longer fresh go stale. A lane
   * starts its entries in queue order, so once the last one left the queue all did.
   */
  read(first: InFlightEntry, last: InFlightEntry, takenAt: number): void {
    if (last.state !== EntryState.Queued) return;
    this.reads.push({ staleAt: takenAt + this.freshMs, first: first.admission, last: last.admission });
    if (this.timer === undefined) this.arm();
  }

  /** The reader stopped: the entries left are handed off at close(), never started here. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.reads.length = 0;
  }

  private arm(): void {
    this.forgetStarted();
    const oldest = this.reads[0];
    if (oldest === undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.expire();
      this.arm();
    }, Math.max(0, oldest.staleAt - performance.now()));
    this.timer.unref();
  }

  /** Reads none of whose entries is still queued (all started, or handed off): none of them can go stale. */
  private forgetStarted(): void {
    const firstQueued = this.firstQueuedAdmission();
    while (this.reads.length > 0 && (this.reads[0] as QueuedRead).last < firstQueued) this.reads.shift();
  }

  /** The admission number of the binding's first entry waiting for a handler (the queue is in admission order; its front may hold started ones). */
  private firstQueuedAdmission(): number {
    for (const entry of this.binding.queue) if (entry.state === EntryState.Queued) return entry.admission;
    return Number.POSITIVE_INFINITY;
  }

  /** The reads whose tokens are stale now: their entries still queued (and still held here) go stale. */
  private expire(): void {
    const now = performance.now();
    let stale = 0;
    while (this.reads.length > 0 && (this.reads[0] as QueuedRead).staleAt <= now) {
      const { first, last } = this.reads.shift() as QueuedRead;
      // The queue is in admission order (entries join it as they are made); its front may hold started ones.
      for (const entry of this.binding.queue) {
        if (entry.admission > last) break;
        if (entry.admission < first || entry.state !== EntryState.Queued || !entry.held || entry.needsStartToken) continue;
        entry.needsStartToken = true;
        stale++;
      }
    }
    refundTokens(this.rate, stale);
  }
}

/** One entry's ask for a fresh start token, answered with the others of its turn. */
interface TokenAsk {
  readonly resolve: (grant: TokenGrant) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Fresh start tokens for entries whose read's tokens went stale (`LateStarts`), of their binding's
 * rate limit: the asks of one turn (the lanes start such entries together) share one `take(n)`, as
 * GlobalPermits sums its releases. The first asks get the tokens granted; the rest none, with the
 * script's wait (or one token's time, when only part of `n` was there).
 */
export class StartTokens {
  private readonly asks = new Map<SharedRateLimit, TokenAsk[]>();

  take(rate: SharedRateLimit): Promise<TokenGrant> {
    return new Promise((resolve, reject) => {
      let asks = this.asks.get(rate);
      if (asks === undefined) {
        this.asks.set(rate, (asks = []));
        queueMicrotask(() => this.send(rate));
      }
      asks.push({ resolve, reject });
    });
  }

  private send(rate: SharedRateLimit): void {
    const asks = this.asks.get(rate) as TokenAsk[];
    this.asks.delete(rate);
    rate.take(asks.length).then(
      ({ granted, waitMs }) => {
        const wait = waitMs > 0 ? waitMs : Math.ceil(rate.limit.perMs / rate.limit.max);
        asks.forEach((ask, i) => ask.resolve(i < granted ? { granted: 1, waitMs: 0 } : { granted: 0, waitMs: wait }));
      },
      (error: unknown) => {
        for (const ask of asks) ask.reject(error);
      },
    );
  }
}
