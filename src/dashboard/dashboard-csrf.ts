import { Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { errorMessage } from '../error-message.js';
import { Redactor } from '../redaction.js';
import { DashboardContext } from './dashboard-context.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/** Header the page sends its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';
/** Where replicas that were given no `csrfSecret` share one: created once (SET NX), never changed. */
export const CSRF_SECRET_KEY = 'nestjs-redis-streams:dashboard:csrf-secret';
/** How long a token is taken; the page fetches a new one when a mutation is refused for its token. */
export const CSRF_TOKEN_LIFETIME_MS = 24 * 3_600_000;
/** Clocks of replicas may differ this much: a token issued "in the future" by that much is taken. */
const CLOCK_SKEW_MS = 5 * 60_000;

/**
 * CSRF tokens any replica of the app can check without asking the others: `<issued>.<nonce>.<mac>`,
 * the HMAC-SHA256 of `<issued>.<nonce>` under a secret every replica holds (the `csrfSecret`
 * option, else one shared through Redis). A token lasts CSRF_TOKEN_LIFETIME_MS.
 */
@Injectable()
export class CsrfTokens {
  private secret: Promise<Buffer> | undefined;
  private readonly redactor: Redactor;

  constructor(
    @Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly context: DashboardContext,
  ) {
    this.redactor = context.answerRedactor;
  }

  async issue(now = Date.now()): Promise<string> {
    const payload = `${now.toString(36)}.${randomBytes(16).toString('base64url')}`;
    return `${payload}.${mac(await this.currentSecret(), payload)}`;
  }

  async verify(candidate: unknown, now = Date.now()): Promise<boolean> {
    if (typeof candidate !== 'string') return false;
    const parts = candidate.split('.');
    if (parts.length !== 3) return false;
    const [issued, nonce, given] = parts as [string, string, string];
    const age = now - parseInt(issued, 36);
    if (!/^[0-9a-z]{1,12}$/.test(issued) || !(age <= CSRF_TOKEN_LIFETIME_MS && age >= -CLOCK_SKEW_MS)) return false;
    const payload = `${issued}.${nonce}`;
    if (sameText(given, mac(await this.currentSecret(), payload))) return true;
    // A replica that read the shared secret before Redis lost it (and another replica made a
    // new one) adopts the one Redis holds now, instead of refusing that replica's tokens.
    if (this.options.csrfSecret !== undefined) return false;
    this.secret = undefined;
    return sameText(given, mac(await this.currentSecret(), payload));
  }

  /** The `csrfSecret` option, else the secret in Redis (created by whichever replica asks first). Read again after a failure. */
  private currentSecret(): Promise<Buffer> {
    if (this.options.csrfSecret !== undefined) return Promise.resolve(Buffer.from(this.options.csrfSecret, 'utf8'));
    this.secret ??= this.sharedSecret().catch((error: unknown) => {
      this.secret = undefined;
      throw new ServiceUnavailableException(`the dashboard's CSRF secret could not be read from Redis (${this.redactor.text(errorMessage(error))}): give the csrfSecret option, or let the connection SET and GET ${CSRF_SECRET_KEY}`);
    });
    return this.secret;
  }

  private async sharedSecret(): Promise<Buffer> {
    const redis = this.context.redis;
    await redis.set(CSRF_SECRET_KEY, randomBytes(32).toString('base64url'), 'NX');
    const secret = await redis.get(CSRF_SECRET_KEY);
    if (secret === null || secret.length < 32) throw new Error(`${CSRF_SECRET_KEY} holds no secret`);
    return Buffer.from(secret, 'utf8');
  }
}

function mac(secret: Buffer, payload: string): string {
  return createHmac('sha256', secret).update(payload).digest('base64url');
}

function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
