import { ForbiddenException, Inject, Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { REDIS_STREAMS_DASHBOARD_OPTIONS } from './tokens.js';

/** Sent with every response of the dashboard: the page runs only its own script and style. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

/** Header the page sends its CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

/** The CSRF token: random per module instance (so per process), handed to the page by `api/session`. */
@Injectable()
export class CsrfToken {
  readonly value = randomBytes(32).toString('base64url');

  matches(candidate: unknown): boolean {
    if (typeof candidate !== 'string') return false;
    const given = Buffer.from(candidate);
    const expected = Buffer.from(this.value);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/**
 * First guard of every dashboard route: sets the security headers through the app's HTTP adapter
 * (Express or Fastify), so they are on refusals by the later guards too. Lets every request on.
 */
@Injectable()
export class SecurityHeadersGuard implements CanActivate {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  canActivate(context: ExecutionContext): boolean {
    const response: unknown = context.switchToHttp().getResponse();
    const adapter = this.adapterHost.httpAdapter;
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) adapter.setHeader(response, name, value);
    return true;
  }
}

/** What the guards read of a request (Express and Fastify both give the headers lower-cased). */
interface GuardedRequest {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Refuses with 403, and logs, a request the dashboard will not serve. Subclasses say why.
 * The path names the action; no body is read or logged.
 */
abstract class RefusingGuard implements CanActivate {
  private readonly logger = new Logger('RedisStreamsDashboard');

  protected abstract refusal(headers: GuardedRequest['headers']): string | undefined;

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const refusal = this.refusal(request.headers);
    if (refusal === undefined) return true;
    this.logger.warn(`refused ${JSON.stringify(request.url.split('?')[0])}: ${refusal}`);
    throw new ForbiddenException(refusal);
  }
}

/**
 * On the CSRF token's route and every mutation: refuses what the browser says came from another
 * site (`Sec-Fetch-Site`) or another origin (`Origin` against `Host`), even if the app enabled
 * CORS for everyone.
 */
@Injectable()
export class SameOriginGuard extends RefusingGuard {
  protected refusal(headers: GuardedRequest['headers']): string | undefined {
    const site = single(headers['sec-fetch-site']);
    if (site !== undefined && site !== 'same-origin') return `cross-site request refused (Sec-Fetch-Site: ${JSON.stringify(site)})`;
    const origin = single(headers.origin);
    if (origin !== undefined && !sameHost(origin, single(headers.host))) return 'request from another origin refused';
    return undefined;
  }
}

/**
 * Last guard of every mutating route (after the app's guard and SameOriginGuard): refuses when
 * the dashboard is read-only, when the CSRF token header is missing or wrong, and when the body is
 * not JSON (a cross-site form cannot send one).
 */
@Injectable()
export class MutationGuard extends RefusingGuard {
  constructor(
    @Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly token: CsrfToken,
  ) {
    super();
  }

  protected refusal(headers: GuardedRequest['headers']): string | undefined {
    if (this.options.readOnly) return 'the dashboard is read-only (RedisStreamsDashboardModule readOnly: true)';
    if (!this.token.matches(single(headers[CSRF_HEADER]))) return 'missing or wrong CSRF token';
    const type = single(headers['content-type']) ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) return 'mutations take a JSON body (Content-Type: application/json)';
    return undefined;
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Whether `origin` (`http://host:port`) names the host the request was sent to. */
function sameHost(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}
