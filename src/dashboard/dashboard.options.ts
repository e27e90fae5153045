import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { RedisStreamsOptionError } from '../errors.js';
import { booleanOption, describe, integerOption, nonEmptyStringOption } from '../validation.js';
import { allowedHostsOption, type AllowedHost } from './dashboard-hosts.js';
import { actionsOption, type DashboardActionKind } from './dashboard-permissions.js';

/** What `RedisStreamsDashboardModule.forRoot` takes. */
export interface RedisStreamsDashboardOptions {
  /** Where the page and its JSON API are mounted (behind any global prefix). Default `/streams`. */
  path?: string;
  /** Streams shown besides the ones this process's servers read (a partitioned stream by its name: `orders`). */
  streams?: readonly string[];
  /**
   * Default true: the page only reads. `false` enables redrive / purge / ack / claim / delete
   * consumer, and then `guard` is required.
   */
  readOnly?: boolean;
  /**
   * The kinds of action allowed when `readOnly` is false (`['redrive', 'ack']`: redrive yes,
   * purge no); default every kind. Others are refused with 403 by the server and not offered by
   * the page. Ignored while `readOnly` (then none is allowed).
   */
  actions?: readonly DashboardActionKind[];
  /**
   * A Nest guard (class or instance) in front of every route of the dashboard, page and API.
   * Required when `readOnly` is false. Its dependencies must be injectable in the dashboard's
   * module: list their modules in `imports`.
   */
  guard?: Type<CanActivate> | CanActivate;
  /** Modules the guard's dependencies come from. */
  imports?: ModuleMetadata['imports'];
  /** How often the page refreshes, in ms (it polls). Default 2000, at least 500. */
  refreshInterval?: number;
  /** Most streams one refresh reads (servers' streams, `streams` and names typed into the page). Default 50. */
  maxStreams?: number;
  /**
   * ms between two samples the module keeps for the charts (in/s, out/s, lag, pending, dead
   * letters; the last 360 samples: an hour at the default). Default 10000, at least 500; 0 turns
   * sampling and the charts off.
   */
  sampleInterval?: number;
  /**
   * Host names (or addresses) the app is reached under, as the browser's `Host` header names them:
   * `"dashboard.example.com"` (any port) or `"dashboard.example.com:8443"`. Every other `Host` is
   * refused with 403 (DNS rebinding). Always accepted besides: `localhost`, `127.0.0.1`, `[::1]`
   * and the address the request came in on. Default `[]`.
   */
  allowedHosts?: readonly string[];
  /**
   * Secret the CSRF tokens are signed with (at least 32 characters), the same on every replica of
   * the app. Default: a random secret created once in Redis (`nestjs-redis-streams:dashboard:csrf-secret`)
   * and shared by every replica on that Redis.
   */
  csrfSecret?: string;
}

export interface ResolvedDashboardOptions {
  /** Normalized: leading slash, no trailing one (`/` for the root). */
  readonly path: string;
  readonly streams: readonly string[];
  readonly readOnly: boolean;
  /** The action kinds allowed; empty while read-only. */
  readonly actions: ReadonlySet<DashboardActionKind>;
  readonly guard: Type<CanActivate> | CanActivate | undefined;
  readonly imports: NonNullable<ModuleMetadata['imports']>;
  readonly refreshInterval: number;
  readonly maxStreams: number;
  readonly sampleInterval: number;
  readonly allowedHosts: readonly AllowedHost[];
  readonly csrfSecret: string | undefined;
}

/** Shortest `csrfSecret` taken. */
export const MIN_CSRF_SECRET_LENGTH = 32;

/** Checks every option (naming the bad one) when the app's module is declared. */
export function resolveDashboardOptions(options: RedisStreamsDashboardOptions = {}): ResolvedDashboardOptions {
  if (options === null || typeof options !== 'object') {
    throw new RedisStreamsOptionError('options', `RedisStreamsDashboardModule options must be an object, got ${describe(options)}`);
  }
  const readOnly = booleanOption('readOnly', options.readOnly, true);
  const guard = options.guard;
  if (guard !== undefined && typeof guard !== 'function' && (guard === null || typeof (guard as CanActivate).canActivate !== 'function')) {
    throw new RedisStreamsOptionError('guard', `must be a Nest guard class or an object with canActivate(), got ${describe(guard)}`);
  }
  if (!readOnly && guard === undefined) {
    throw new RedisStreamsOptionError('guard', 'is required when readOnly is false: mutating actions are only served behind a guard of the app (see docs/dashboard.md)');
  }
  if (options.imports !== undefined && !Array.isArray(options.imports)) {
    throw new RedisStreamsOptionError('imports', `must be an array of modules, got ${describe(options.imports)}`);
  }
  return {
    path: pathOption(options.path),
    streams: streamsOption(options.streams),
    readOnly,
    actions: actionsOption(options.actions, readOnly),
    guard,
    imports: options.imports ?? [],
    refreshInterval: integerOption('refreshInterval', options.refreshInterval, 2_000, 500, 3_600_000),
    maxStreams: integerOption('maxStreams', options.maxStreams, 50, 1, 1_000),
    sampleInterval: sampleIntervalOption(options.sampleInterval),
    allowedHosts: allowedHostsOption(options.allowedHosts),
    csrfSecret: csrfSecretOption(options.csrfSecret),
  };
}

function csrfSecretOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length < MIN_CSRF_SECRET_LENGTH) {
    throw new RedisStreamsOptionError('csrfSecret', `must be a string of at least ${MIN_CSRF_SECRET_LENGTH} characters (the same on every replica), got ${typeof value === 'string' ? `${value.length} characters` : describe(value)}`);
  }
  return value;
}

function pathOption(value: unknown): string {
  const path = nonEmptyStringOption('path', value, '/streams');
  // Kept to plain URL path characters: the path ends up in routes and in the page's links.
  if (!/^\/?[A-Za-z0-9._~\-/]*$/.test(path) || path.includes('//')) {
    throw new RedisStreamsOptionError('path', `must be a URL path of letters, digits and . _ ~ - / (such as "/streams"), got ${describe(path)}`);
  }
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  return `/${trimmed}`;
}

function streamsOption(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new RedisStreamsOptionError('streams', `must be an array of stream names, got ${describe(value)}`);
  return value.map((name, index) => nonEmptyStringOption(`streams[${index}]`, name));
}

/** 0 (off) or between 500 ms and an hour. */
function sampleIntervalOption(value: unknown): number {
  return value === 0 ? 0 : integerOption('sampleInterval', value, 10_000, 500, 3_600_000);
}
