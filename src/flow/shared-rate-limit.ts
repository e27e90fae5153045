import type { RedisClient } from '../redis/connection.js';
import { rateLimitKey } from './flow-keys.js';
import type { ResolvedRateLimit } from './flow-options.js';
import { flowScripts } from './scripts/loader.js';

/** What `take` answers: tokens granted, or (none granted) how long to wait before asking again. */
export interface TokenGrant {
  readonly granted: number;
  readonly waitMs: number;
}

/**
 * One handler's `extras.rateLimit`, a token bucket in Redis (rate-limit.lua) that every worker
 * of the group draws from. A reader takes tokens for the entries it is about to read and gives
 * back those its read did not use, so tokens are spent only on entries handed to handlers.
 */
export class SharedRateLimit {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    stream: string,
    group: string,
    readonly limit: ResolvedRateLimit,
  ) {
    this.key = rateLimitKey(stream, group);
  }

  async take(wanted: number): Promise<TokenGrant> {
    const [granted, waitMs] = await flowScripts(this.redis).nrsRateLimit(this.key, 'take', this.limit.max, this.limit.perMs, wanted);
    return { granted: Number(granted), waitMs: Number(waitMs) };
  }

  /** Gives back tokens taken and not used. A failure loses them: the limit errs on the slow side. */
  async refund(unused: number): Promise<void> {
    if (unused <= 0) return;
    await flowScripts(this.redis).nrsRateLimit(this.key, 'refund', this.limit.max, this.limit.perMs, unused);
  }

  /** No entry of this handler starts on any worker for `ms` (an API answered 429). */
  async backOff(ms: number): Promise<void> {
    await flowScripts(this.redis).nrsRateLimit(this.key, 'backoff', this.limit.max, this.limit.perMs, Math.ceil(ms));
  }
}
