import { RedisStreamsOptionError } from '../errors.js';
import { describe, nonEmptyStringOption } from '../validation.js';

/**
 * Which `Host` a request to the dashboard may name. A DNS-rebinding page reaches the app under
 * the attacker's own host name (which then resolves to the app's address): its requests are
 * same-origin to the browser, and only their `Host` tells them apart. A loopback name or an
 * address the request really reached cannot be rebound, so they are always accepted.
 */

/** One accepted host: its name, and its port or undefined for any port. */
export interface AllowedHost {
  readonly hostname: string;
  readonly port: string | undefined;
}

/** Always accepted, on any port. */
const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The `allowedHosts` option: host names (or addresses) the app is reached under besides the
 * loopback ones, each `name` (any port) or `name:port`. Lower-cased; IPv6 addresses in brackets.
 */
export function allowedHostsOption(value: unknown): AllowedHost[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new RedisStreamsOptionError('allowedHosts', `must be an array of host names such as "dashboard.example.com" or "dashboard.example.com:8443", got ${describe(value)}`);
  return value.map((entry, index) => {
    const option = `allowedHosts[${index}]`;
    const parsed = parseHost(nonEmptyStringOption(option, entry));
    if (parsed === undefined) throw new RedisStreamsOptionError(option, `must be a host name or address, optionally with a port ("dashboard.example.com", "10.0.0.5:3000", "[fd00::5]"), got ${describe(entry)}`);
    return parsed;
  });
}

/**
 * Whether a request's `Host` header names an accepted host: a loopback name, the address the
 * request came in on (`localAddress` of its socket: the app's own listening address), or one of
 * `allowed`. A missing or malformed `Host` is not accepted.
 */
export function isAllowedHost(host: string | undefined, localAddress: string | undefined, allowed: readonly AllowedHost[]): boolean {
  const requested = host === undefined ? undefined : parseHost(host);
  if (requested === undefined) return false;
  if (LOOPBACK_HOSTS.includes(requested.hostname)) return true;
  if (localAddress !== undefined && requested.hostname === addressHostname(localAddress)) return true;
  return allowed.some((one) => one.hostname === requested.hostname && (one.port === undefined || one.port === requested.port));
}

/** `name`, `name:port`, `[v6]` or `[v6]:port` as the URL parser normalizes them (lower case, `[::1]`); undefined when not a bare host. */
function parseHost(text: string): AllowedHost | undefined {
  if (!/^[^/?#@\s\\]+$/.test(text)) return undefined;
  try {
    const url = new URL(`http://${text}`);
    return { hostname: url.hostname, port: /:\d+$/.test(text) ? portOf(text) : undefined };
  } catch {
    return undefined;
  }
}

/** The port as written (the URL parser drops 80, the default port, which must still match). */
function portOf(text: string): string {
  return String(Number(text.slice(text.lastIndexOf(':') + 1)));
}

/** A socket's address as a Host would name it: `10.0.0.5`, `[fd00::5]`; IPv4-mapped IPv6 as IPv4. */
function addressHostname(address: string): string | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return parseHost(mapped !== null ? mapped[1]! : address.includes(':') ? `[${address}]` : address)?.hostname;
}
