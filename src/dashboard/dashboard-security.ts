import { ForbiddenException, Inject, Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { HttpAdapterHost, Reflector } from '@nestjs/core';
import { CSRF_HEADER, CsrfTokens } from './dashboard-csrf.js';
import { isAllowedHost } from './dashboard-hosts.js';
import { ACTION_KIND_METADATA, actionRefusal } from './dashboard-permissions.js';
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

/** What a refusal of a mutation for its CSRF token says, so that the page fetches a new token and tries once more. */
export const CSRF_REFUSAL = 'csrf';
/** What a refusal of a mutation whose kind the `actions` option leaves out says. */
export const ACTION_REFUSAL = 'action-not-allowed';

/**
 * First guard of every dashboard route: sets the security headers through the app's HTTP adapter
 * (Express or Fastify), so they are on refusals by the later guards too. Lets every request on.
 * (Responses no route answers, such as a 404 under the mount, get them from DashboardResponseHeaders.)
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
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Express: the socket; Fastify: on `raw` (and `socket`). */
  socket?: { localAddress?: string };
  raw?: { socket?: { localAddress?: string } };
}

interface Refusal {
  message: string;
  /** A machine-readable reason the page acts on. */
  reason?: string;
}

/**
 * Refuses with 403, and logs, a request the dashboard will not serve. Subclasses say why.
 * The path names the action; no body is read or logged.
 */
abstract class RefusingGuard implements CanActivate {
  private readonly logger = new Logger('RedisStreamsDashboard');

  protected abstract refusal(request: GuardedRequest, context: ExecutionContext): Refusal | undefined | Promise<Refusal | undefined>;

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<GuardedRequest>();
    const refusal = await this.refusal(request, context);
    if (refusal === undefined) return true;
    this.logger.warn(`refused ${JSON.stringify(request.url.split('?')[0])}: ${refusal.message}`);
    throw new ForbiddenException({ statusCode: 403, error: 'Forbidden', message: refusal.message, ...(refusal.reason === undefined ? {} : { reason: refusal.reason }) });
  }
}

/**
 * On every route (page, assets, reads, token, mutations), before the app's guard, whatever CORS
 * the app enabled:
 * - a `Host` the operator did not allow (`allowedHosts`, loopback names, the address the request
 *   reached) is refused: a DNS-rebinding page names its own host, and its requests are otherwise
 *   same-origin;
 * - what the browser says came from another site (`Sec-Fetch-Site` other than `same-origin`) or
 *   another origin (`Origin` against `Host`) is refused. A navigation (a link followed to the
 *   page) is let on: its answer goes to the operator's tab, no other site can read it.
 */
@Injectable()
export class TrustedRequestGuard extends RefusingGuard {
  constructor(@Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {
    super();
  }

  protected refusal({ headers, method, socket, raw }: GuardedRequest): Refusal | undefined {
    const host = single(headers.host) ?? single(headers[':authority']);
    const localAddress = (raw?.socket ?? socket)?.localAddress;
    if (!isAllowedHost(host, localAddress, this.options.allowedHosts)) {
      return { message: `host ${JSON.stringify(host ?? '')} is not allowed (RedisStreamsDashboardModule allowedHosts)` };
    }
    if (single(headers['sec-fetch-mode']) === 'navigate' && (method === 'GET' || method === 'HEAD')) return undefined;
    const site = single(headers['sec-fetch-site']);
    if (site !== undefined && site !== 'same-origin') return { message: `cross-site request refused (Sec-Fetch-Site: ${JSON.stringify(site)})` };
    const origin = single(headers.origin);
    if (origin !== undefined && !sameHost(origin, host)) return { message: 'request from another origin refused' };
    return undefined;
  }
}

/**
 * Last guard of every mutating route (after the app's guard): refuses when the dashboard is
 * read-only, when the route's action kind (`@DashboardAction`) is not in the `actions` option,
 * when the CSRF token header is missing, wrong or expired, and when the body is not JSON (a
 * cross-site form cannot send one).
 */
@Injectable()
export class MutationGuard extends RefusingGuard {
  constructor(
    @Inject(REDIS_STREAMS_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly tokens: CsrfTokens,
    private readonly reflector: Reflector,
  ) {
    super();
  }

  protected async refusal({ headers }: GuardedRequest, context: ExecutionContext): Promise<Refusal | undefined> {
    if (this.options.readOnly) return { message: 'the dashboard is read-only (RedisStreamsDashboardModule readOnly: true)' };
    const notAllowed = actionRefusal(this.reflector.get<unknown>(ACTION_KIND_METADATA, context.getHandler()), this.options.actions);
    if (notAllowed !== undefined) return { message: notAllowed, reason: ACTION_REFUSAL };
    if (!(await this.tokens.verify(single(headers[CSRF_HEADER])))) return { message: 'missing, wrong or expired CSRF token', reason: CSRF_REFUSAL };
    const type = single(headers['content-type']) ?? '';
    if (!/^application\/json\s*(;|$)/i.test(type)) return { message: 'mutations take a JSON body (Content-Type: application/json)' };
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
