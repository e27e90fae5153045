import type { RedisOptions } from 'ioredis';
import { RedisStreamsOptionError } from '../errors.js';
import { redactUrl } from '../redaction.js';

/** Port of a sentinel when its address names none (Redis' default). */
export const DEFAULT_SENTINEL_PORT = 26379;

const SENTINEL_SCHEME = /^(rediss?)\+sentinel:\/\//i;

/** Query options a Sentinel URL takes (anything else belongs in the object form). */
const URL_QUERY_OPTIONS = ['sentinelUsername', 'sentinelPassword'];

const URL_FORM = 'redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/primaryName[/db][?sentinelPassword=...]';

/** True for `redis+sentinel://…` and `rediss+sentinel://…`. */
export function isSentinelUrl(value: string): boolean {
  return SENTINEL_SCHEME.test(value);
}

/** True for ioredis options that go through sentinels (`{ sentinels, name }`). */
export function isSentinelOptions(value: unknown): value is RedisOptions & { sentinels: unknown[] } {
  return value !== null && typeof value === 'object' && (value as { sentinels?: unknown }).sentinels !== undefined;
}

/**
 * The ioredis options of a Sentinel URL:
 * `redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/primaryName[/db][?sentinelPassword=...]`.
 * The hosts are sentinels (port 26379 when omitted); the user and password are those of the
 * primary and its replicas; `sentinelUsername` / `sentinelPassword` in the query authenticate to
 * the sentinels. `rediss+sentinel://` turns TLS on for both (ioredis ignores `tls` in Sentinel
 * mode unless `enableTLSForSentinelMode` is set). Throws `RedisStreamsOptionError` naming `option`.
 */
export function sentinelUrlOptions(option: string, url: string, keyPrefixReason: string): RedisOptions {
  const scheme = SENTINEL_SCHEME.exec(url);
  const shown = JSON.stringify(redactUrl(url));
  if (scheme === null) throw new RedisStreamsOptionError(option, `must be a Sentinel URL (${URL_FORM}); got ${shown}`);
  const fail = (why: string): never => {
    throw new RedisStreamsOptionError(option, `${why} (${URL_FORM}): ${shown}`);
  };
  const rest = url.slice(scheme[0].length);
  if (rest.includes('#')) fail('takes no #fragment');
  const queryAt = rest.indexOf('?');
  const beforeQuery = queryAt < 0 ? rest : rest.slice(0, queryAt);
  const query = new URLSearchParams(queryAt < 0 ? '' : rest.slice(queryAt + 1));
  const slash = beforeQuery.indexOf('/');
  const authority = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  const path = slash < 0 ? '' : beforeQuery.slice(slash + 1);
  const at = authority.lastIndexOf('@');
  const options: RedisOptions = {};

  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    const colon = userinfo.indexOf(':');
    const username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), fail);
    const password = colon < 0 ? '' : decode(userinfo.slice(colon + 1), fail);
    if (colon < 0 && username !== '') fail('its user info needs a password (user:password@ or :password@)');
    if (username !== '') options.username = username;
    if (password !== '') options.password = password;
  }
  const hosts = authority.slice(at + 1);
  if (hosts === '') fail('names no sentinel');
  options.sentinels = hosts.split(',').map((address) => sentinelAddress(address, fail));

  const [name, db, ...extra] = path.split('/');
  if (name === undefined || name === '') fail('names no primary: the path is the name the sentinels monitor');
  options.name = decode(name as string, fail);
  if (db !== undefined && db !== '') {
    if (!/^\d+$/.test(db)) fail(`its database must be a number, got "${db}"`);
    options.db = Number(db);
  }
  if (extra.some((part) => part !== '')) fail('has more than /primaryName/db in its path');

  if (query.has('keyPrefix')) throw new RedisStreamsOptionError(`${option}.keyPrefix`, keyPrefixReason);
  for (const key of query.keys()) {
    if (!URL_QUERY_OPTIONS.includes(key)) {
      fail(`takes only ${URL_QUERY_OPTIONS.join(' and ')} in its query, not "${key}" (use the { sentinels, name, ... } object form)`);
    }
  }
  const sentinelUsername = query.get('sentinelUsername');
  const sentinelPassword = query.get('sentinelPassword');
  if (sentinelUsername !== null && sentinelUsername !== '') options.sentinelUsername = sentinelUsername;
  if (sentinelPassword !== null && sentinelPassword !== '') options.sentinelPassword = sentinelPassword;

  if (scheme[1]?.toLowerCase() === 'rediss') {
    options.tls = {};
    options.sentinelTLS = {};
    options.enableTLSForSentinelMode = true;
  }
  return options;
}

function sentinelAddress(address: string, fail: (why: string) => never): { host: string; port: number } {
  // [::1]:26379, [::1], host:26379, host
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d*))?$/.exec(address);
  if (match === null) return fail(`"${address}" is not a sentinel address (host:port)`);
  const host = (match[1] ?? match[2]) as string;
  const port = match[3] === undefined || match[3] === '' ? DEFAULT_SENTINEL_PORT : Number(match[3]);
  if (port < 1 || port > 65_535) fail(`"${address}" has no valid port`);
  return { host, port };
}

function decode(text: string, fail: (why: string) => never): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return fail('has a malformed %-escape');
  }
}

/**
 * Checks the ioredis Sentinel options (`{ sentinels: [{ host, port }], name, ... }`) before
 * anything connects, naming the faulty part (`connection.sentinels[1].port`, `connection.name`).
 */
export function sentinelConnectionOption(option: string, value: Record<string, unknown>): void {
  const sentinels = value.sentinels;
  if (!Array.isArray(sentinels) || sentinels.length === 0) {
    throw new RedisStreamsOptionError(`${option}.sentinels`, 'must be a non-empty list of sentinel addresses ({ host, port })');
  }
  sentinels.forEach((sentinel: unknown, i) => {
    const name = `${option}.sentinels[${i}]`;
    if (sentinel === null || typeof sentinel !== 'object' || Array.isArray(sentinel)) {
      throw new RedisStreamsOptionError(name, `must be { host, port }; got ${sentinel === null ? 'null' : typeof sentinel}`);
    }
    const { host, port } = sentinel as { host?: unknown; port?: unknown };
    if (host !== undefined && (typeof host !== 'string' || host.length === 0)) throw new RedisStreamsOptionError(`${name}.host`, 'must be a non-empty string');
    if (port !== undefined && !(Number.isInteger(port) && (port as number) >= 1 && (port as number) <= 65_535)) {
      throw new RedisStreamsOptionError(`${name}.port`, 'must be an integer between 1 and 65535');
    }
  });
  if (typeof value.name !== 'string' || value.name.length === 0) {
    throw new RedisStreamsOptionError(`${option}.name`, 'must name the primary the sentinels monitor (their "sentinel monitor <name>")');
  }
  if (value.role !== undefined && value.role !== 'master') {
    throw new RedisStreamsOptionError(`${option}.role`, 'must be "master" (or left out): the transport writes (XADD, XACK, XREADGROUP), a replica refuses writes');
  }
}

/** Longest default wait for one sentinel's answer before ioredis asks the next one. */
export const MAX_DEFAULT_SENTINEL_COMMAND_TIMEOUT = 2_000;

/**
 * Sentinel options as users expect them (an explicit value always wins):
 * - `tls` set means TLS to the primary and replicas too (ioredis applies `tls` to them only when
 *   `enableTLSForSentinelMode` is on, and otherwise silently connects in clear text);
 * - `failoverDetector` on: each connection listens for the sentinels' `+switch-master` and
 *   reconnects to the new primary at once. Without it, a connection to a primary that was
 *   failed over while alive (`SENTINEL FAILOVER`, a partition) keeps writing to it until the
 *   sentinels demote it, 8 to 20 s later, and every write of that time is thrown away.
 * - `sentinelCommandTimeout` bounded (ioredis sets none): a sentinel that accepts connections
 *   but never answers (stopped, swapping; the kernel still accepts on its port) held every
 *   connect and reconnect for good instead of letting ioredis ask the next sentinel. A third of
 *   `connectTimeout`, at most 2 s: a connect bounded by it (the client's is) can skip such a
 *   sentinel or two and still reach the primary through the next.
 * Takes the options once merged with the transport's own (their `connectTimeout` counts).
 */
export function withSentinelDefaults(options: RedisOptions): RedisOptions {
  if (options.sentinels == null) return options;
  const defaults: RedisOptions = { failoverDetector: true, sentinelCommandTimeout: defaultSentinelCommandTimeout(options.connectTimeout) };
  if (options.tls !== undefined) defaults.enableTLSForSentinelMode = true;
  return { ...defaults, ...withoutUndefined(options) };
}

function defaultSentinelCommandTimeout(connectTimeout: number | undefined): number {
  // ioredis' own connectTimeout is 10 s; 0 turns it off.
  if (connectTimeout === undefined || !(connectTimeout > 0)) return MAX_DEFAULT_SENTINEL_COMMAND_TIMEOUT;
  return Math.max(1, Math.min(MAX_DEFAULT_SENTINEL_COMMAND_TIMEOUT, Math.floor(connectTimeout / 3)));
}

function withoutUndefined(options: RedisOptions): RedisOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as RedisOptions;
}
