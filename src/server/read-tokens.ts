import type { SharedRateLimit, TokenGrant, TokenSource } from '../flow/shared-rate-limit.js';
import { refundTokens } from './binding-limits.js';
import { freshTokenMs } from './start-tokens.js';

/** The most reads' worth of tokens one take asks for. */
const MAX_READS_PER_TAKE = 16;

/**
 * The tokens of a rate-limited reader (stream-reader.ts readLimited). Each take of the bucket is one
 * script call, so a reader whose reads keep using every token they get takes tokens for several
 * reads at once: twice as many reads' worth after a take used up while fresh, half after tokens
 * went back. What one take brought serves reads only while fresh (a fiftieth of `per`, as a read's
 * own tokens: start-tokens.ts), and what is left then goes back. A take short of what it asked for
 * (the limit binds) starts over at one read's worth: the workers then share the bucket read by
 * read, as without this.
 */
export class ReadTokens implements TokenSource {
  private readonly freshMs: number;
  /** What is left of the last take, and when it was taken. */
  private left = 0;
  private takenAt = 0;
  /** Reads' worth the next take asks for. */
  private reads = 1;
  /** The last take got all it asked for (the limit did not bind). */
  private tookAll = false;
  private staleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly rate: SharedRateLimit) {
    this.freshMs = freshTokenMs(rate);
  }

  /**
   * Up to `wanted` tokens for one read: what is left of the last take while fresh, at once (no
   * call, no promise), else a new take.
   */
  take(wanted: number): TokenGrant | Promise<TokenGrant> {
    if (this.left > 0 && performance.now() < this.takenAt + this.freshMs) return this.serve(wanted);
    return this.takeFromBucket(wanted);
  }

  private async takeFromBucket(wanted: number): Promise<TokenGrant> {
    this.refundLeft();
    const asked = wanted * this.reads;
    const takenAt = performance.now();
    const grant = await this.rate.take(asked);
    this.tookAll = grant.granted === asked;
    if (!this.tookAll) this.reads = 1;
    this.takenAt = takenAt;
    if (grant.granted === 0) return grant;
    this.left = grant.granted;
    const served = this.serve(wanted);
    if (this.left > 0) this.armStaleRefund();
    return served;
  }

  /**
   * A read gave tokens back (it came back short: no backlog; or it failed) or the reader stops:
   * what is left goes back too, and the next take asks for half as many reads.
   */
  giveBack(): void {
    const hadLeft = this.left > 0;
    this.refundLeft();
    if (!hadLeft) this.halve();
  }

  /** When the tokens served last were taken (performance.now()): the age of their entries' tokens. */
  get servedTakenAt(): number {
    return this.takenAt;
  }

  /** What is left of the last take goes back (stale, or no read wants it); if any, the next take asks for half as many reads. */
  private refundLeft(): void {
    if (this.staleTimer !== undefined) clearTimeout(this.staleTimer);
    this.staleTimer = undefined;
    if (this.left === 0) return;
    refundTokens(this.rate, this.left);
    this.left = 0;
    this.halve();
  }

  private halve(): void {
    this.reads = Math.max(1, Math.floor(this.reads / 2));
  }

  private serve(wanted: number): TokenGrant {
    const granted = Math.min(wanted, this.left);
    this.left -= granted;
    if (this.left === 0) {
      if (this.staleTimer !== undefined) clearTimeout(this.staleTimer);
      this.staleTimer = undefined;
      // All it asked for, used up while fresh: the next take may ask for more reads.
      if (this.tookAll) this.reads = Math.min(MAX_READS_PER_TAKE, this.reads * 2);
    }
    return { granted, waitMs: 0 };
  }

  /** Held past their freshness, the tokens left would keep the other workers from them: back when stale. */
  private armStaleRefund(): void {
    this.staleTimer = setTimeout(() => {
      this.staleTimer = undefined;
      this.refundLeft();
    }, Math.max(0, this.takenAt + this.freshMs - performance.now()));
    this.staleTimer.unref();
  }
}
