import { grantFromLimits, returnGrant, type BindingLimits } from './binding-limits.js';
import { tokenFreshMs } from './start-tokens.js';

interface AskedGrant {
  readonly granted: number;
  /** performance.now() when it was asked for. */
  readonly askedAt: number;
}

const NONE: AskedGrant = { granted: 0, askedAt: 0 };

/**
 * The grant of a limited reader's next read, asked for while this read is in flight
 * (stream-reader.ts readLimited), so that a limit that does not bind adds no round trip before a
 * read: the plain reader's next read goes out at once, the limited one's grant is then at hand.
 * At most one is out. What the next read does not use goes back at once (permits released, tokens
 * refunded), and so does all of it before the reader waits, pauses or stops.
 *
 * Tokens count starts: tokens asked for ahead serve a read only within `freshMs` (a fiftieth of
 * `per`) of being asked for; older ones go back and the read asks afresh, so no entry starts on
 * tokens the bucket has had time to forget (a reconnect, a Redis restart, busy handlers between).
 */
export class GrantAhead {
  private asked: Promise<AskedGrant> | undefined;
  /** How long tokens asked ahead may wait for their read (permits alone: no limit). */
  private readonly freshMs: number;

  constructor(private readonly limits: BindingLimits) {
    this.freshMs = limits.rate === undefined ? Number.POSITIVE_INFINITY : tokenFreshMs(limits.rate);
  }

  /** Whether a grant was asked ahead and not taken or given back yet. */
  get out(): boolean {
    return this.asked !== undefined;
  }

  /** Asks for the next read's grant of `wanted` entries (permits: at most `permitRoom`), unless one is out. */
  ask(wanted: number, permitRoom: number): void {
    if (this.asked !== undefined) return;
    const askedAt = performance.now();
    // A failed grant is no grant: the next read asks itself and meets the failure.
    this.asked = grantFromLimits(this.limits, wanted, permitRoom).then(
      (grant) => ({ granted: grant.granted, askedAt }),
      () => ({ granted: 0, askedAt }),
    );
  }

  /**
   * Up to `wanted` entries of the grant asked ahead (awaiting its answer), and when it was asked
   * for (its tokens' age); the rest goes back. None when none is out, it brought none, or its
   * tokens are no longer fresh (then all of it goes back).
   */
  async take(wanted: number): Promise<AskedGrant> {
    const asked = this.asked;
    if (asked === undefined) return NONE;
    this.asked = undefined;
    const { granted, askedAt } = await asked;
    const usable = performance.now() - askedAt <= this.freshMs ? Math.min(wanted, granted) : 0;
    returnGrant(this.limits, granted - usable);
    return { granted: usable, askedAt };
  }

  /**
   * Gives back all of a grant asked ahead, once answered: the others use it while this reader
   * waits. Not awaited: a reader that stops while Redis does not answer must not wait for it.
   */
  giveBack(): void {
    void this.take(0);
  }
}
