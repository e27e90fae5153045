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
 * Where a grant's rate-limit tokens come from: the bucket itself (`SharedRateLimit`), or a reader's
 * tokens taken for several reads (server/read-tokens.ts), which answers at once, without a promise,
 * while it holds fresh ones.
 */
export interface TokenSource {
  take(wanted: number): TokenGrant | Promise<TokenGrant>;
}

/**
 * One handler's `extras.rateLimit`, a token bucket in Redis (rate-limit.lua) that every worker
 * of the group draws from. A reader takes tokens for the entries it is about to read and gives
 * back those its read did not use, so tokens are spent only on entries handed to handlers.
 */
export class SharedRateLimit implements TokenSource {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    stream: string,
    group: string,
    readonly limit: ResolvedRateLimit,
  ) {
    this.key = rateLimitKey(stream, group);
  }

  /** `tenant`: the bucket of that key, for a per-key limit (`limit.key`); none: the handler's one bucket. */
  async take(wanted: number, tenant?: string): Promise<TokenGrant> {
    const [granted, waitMs] = await flowScripts(this.redis).nrsRateLimit(this.bucketOf(tenant), 'take', this.limit.max, this.limit.perMs, wanted);
    return { granted: Number(granted), waitMs: Number(waitMs) };
  }

  /** Gives back tokens taken and not used. A failure loses them: the limit errs on the slow side. */
  async refund(unused: number, tenant?: string): Promise<void> {
    if (unused <= 0) return;
    await flowScripts(this.redis).nrsRateLimit(this.bucketOf(tenant), 'refund', this.limit.max, this.limit.perMs, unused);
  }

  /** No entry of this handler (of this key) starts on any worker for `ms` (an API answered 429). */
  async backOff(ms: number, tenant?: string): Promise<void> {
    await flowScripts(this.redis).nrsRateLimit(this.bucketOf(tenant), 'backoff', this.limit.max, this.limit.perMs, Math.ceil(ms));
  }

  /** One bucket per key, next to the handler's (same hash slot); each expires when idle, so memory follows the keys in use. */
  private bucketOf(tenant: string | undefined): string {
    return tenant === undefined ? this.key : `${this.key}:${tenant}`;
  }
}
