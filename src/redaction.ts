/**
 * The one place that keeps secrets out of what the package prints, logs, emits or throws.
 *
 * Two layers: the secrets a connection is known to carry (its passwords, raw, decoded and
 * percent-encoded) are replaced wherever they occur; and patterns that carry secrets of any
 * connection (URL userinfo with or without a scheme, `password=`, the arguments of AUTH, HELLO …
 * AUTH, MIGRATE … AUTH/AUTH2, CONFIG SET requirepass/masterauth, ACL SETUSER) are masked too.
 * Errors are cleaned in place (message, stack, ioredis' `command`, other own properties, the
 * `cause` chain), so their class stays what it was (`instanceof ReplyError` still holds).
 */

export const MASK = '***';

/** Secrets shorter than this are masked by the patterns only: masking "ab" everywhere would garble every message. */
const MIN_SECRET_LENGTH = 4;

/**
 * `redis://user:secret@host` → `redis://user:***@host`, for every form ioredis accepts: with or
 * without a scheme (`:secret@host:6379`, `user:secret@host`), `?password=`, percent-encoded.
 * The whole string is taken as one URL: its password is masked whole whatever it holds (a raw
 * `@`, a space, `:`, `/`, `#`, `?`; see {@link writtenPassword}).
 */
export function redactUrl(url: string): string {
  const masked = url.replace(URL_QUERY_PASSWORD, `$1${MASK}`);
  const span = passwordSpan(masked);
  return redactPatterns(span === undefined ? masked : `${masked.slice(0, span[0])}${MASK}${masked.slice(span[1])}`);
}

/**
 * The password(s) a URL carries (userinfo, `?password=`, `?sentinelPassword=`), for masking: as
 * ioredis reads them (its parseURL: WHATWG `URL`, then decoded), and as written in the URL, raw
 * and decoded.
 */
export function urlSecrets(url: string): string[] {
  const parsed = parseLikeIoredis(url);
  const written = writtenPassword(url);
  const raw = [
    parsed?.password ?? '',
    parsed?.searchParams.get('password') ?? '',
    parsed?.searchParams.get('sentinelPassword') ?? '',
    written ?? '',
    ...[...url.matchAll(URL_QUERY_PASSWORD)].map((match) => match[2] ?? ''),
  ].filter((s) => s.length > 0);
  const decoded = raw.flatMap((secret) => {
    try {
      return [decodeURIComponent(secret)];
    } catch {
      return []; // malformed escapes: the raw form is listed
    }
  });
  return [...new Set([...raw, ...decoded])];
}

/** `?password=…` / `&sentinelPassword=…` in a string known to be one URL: the value runs to the next `&` (spaces, `@`, `#` included). */
const URL_QUERY_PASSWORD = /([?&;](?:sentinel)?password=)([^&]*)/gi;

/**
 * The password of a URL's userinfo as written, `undefined` when it has none. ioredis 6 (utils
 * parseURL → WHATWG `URL`) reads the authority from after `scheme://` (after `//`, or from the
 * start of a URL without a scheme, to which it prepends `redis://`) up to the first `/`, `?` or
 * `#`; its userinfo ends at the LAST `@` in it, and the password follows the first `:` of the
 * userinfo (`redis://:a@b@host` → `a@b`; `redis://u:a:b@host` → `a:b`; spaces and tabs are
 * kept). The Sentinel URL parser (redis/sentinel-connection.ts) reads it the same way.
 *
 * The password taken here runs from that first `:` to the last `@` of the whole URL, which is
 * ioredis' password whenever no `@` follows the authority. When one does, a password with a raw
 * `/`, `?` or `#` ended ioredis' authority early (it then rejects the URL, or reads the rest as a
 * path, query or fragment): that is still what whoever wrote the URL meant as the password, and it
 * is masked whole. The cost: an `@` in a query value masks the host too (nothing is shown, rather
 * than a secret). A string starting with one `/` (a socket path) or an empty authority
 * (`unix:///path`) has no userinfo.
 */
function writtenPassword(url: string): string | undefined {
  const span = passwordSpan(url);
  return span === undefined ? undefined : url.slice(span[0], span[1]);
}

/** `[start, end)` of the password in `url` (see {@link writtenPassword}). */
function passwordSpan(url: string): [number, number] | undefined {
  const scheme = /^\s*(?:[a-z][a-z0-9+.-]*:)?\/\//i.exec(url);
  if (scheme === null && url.startsWith('/')) return undefined; // a socket path
  const authority = scheme === null ? 0 : scheme[0].length;
  if (url[authority] === '/') return undefined; // unix:///path: no authority
  const at = url.lastIndexOf('@');
  const colon = url.indexOf(':', authority);
  if (at < authority || colon < 0 || colon > at) return undefined;
  return [colon + 1, at];
}

/**
 * `new URL` of a URL as ioredis 6 parses it (utils parseURL): `redis://` and `rediss://` as they
 * are, `//host` with `redis:` before it, a socket path (one leading `/`) not at all, anything else
 * with `redis://` before it. `undefined` when that fails (ioredis would throw).
 */
function parseLikeIoredis(url: string): URL | undefined {
  if (url.startsWith('/') && !url.startsWith('//')) return undefined;
  const candidate = /^rediss?:\/\//i.test(url) ? url : url.startsWith('//') ? `redis:${url}` : `redis://${url}`;
  try {
    return new URL(candidate);
  } catch {
    return undefined;
  }
}

/**
 * Every secret a connection carries: a URL in any form, ioredis options (`password`,
 * `sentinelPassword`, a Cluster's `redisOptions.password`), or a Redis/Cluster instance (its `options`).
 */
export function connectionSecrets(connection: unknown): string[] {
  if (typeof connection === 'string') return urlSecrets(connection);
  if (connection === null || typeof connection !== 'object') return [];
  const cluster = (connection as { cluster?: { nodes?: unknown; options?: unknown } }).cluster;
  if (cluster !== null && typeof cluster === 'object') {
    // { cluster: { nodes: [urls], options } }: the URLs' passwords and those of the node options.
    const nodes = Array.isArray(cluster.nodes) ? cluster.nodes.filter((node): node is string => typeof node === 'string') : [];
    return [...new Set([...nodes.flatMap(urlSecrets), ...connectionSecrets(cluster.options ?? {})])];
  }
  const options = (connection as { options?: unknown }).options;
  // A Redis/Cluster instance: its parsed options hold the password.
  const holder = (options !== null && typeof options === 'object' ? options : connection) as Record<string, unknown>;
  const nested = holder.redisOptions as Record<string, unknown> | undefined;
  const found = [holder.password, holder.sentinelPassword, nested?.password, nested?.sentinelPassword];
  return [...new Set(found.filter((s): s is string => typeof s === 'string' && s.length > 0))];
}

/** Masks what may carry a secret in text, errors and event payloads. One per connection. */
export class Redactor {
  private readonly secrets: string[];

  constructor(secrets: readonly string[] = []) {
    const forms = secrets
      .filter((secret) => secret.length >= MIN_SECRET_LENGTH)
      .flatMap((secret) => [secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1), secret.replace(/'/g, "\\'")]);
    // Longest first, so a secret containing another is masked whole.
    this.secrets = [...new Set(forms)].sort((a, b) => b.length - a.length);
  }

  /** The redactor of a connection (URL, options or instance). */
  static for(connection: unknown): Redactor {
    return new Redactor(connectionSecrets(connection));
  }

  /** `text` with every known secret and every secret-carrying pattern masked. */
  readonly text = (text: string): string => {
    let masked = text;
    for (const secret of this.secrets) {
      if (masked.includes(secret)) masked = masked.split(secret).join(MASK);
    }
    return redactPatterns(masked);
  };

  /**
   * Cleans an error in place and returns it: message, stack, ioredis' `command` (`{ name, args }`),
   * every other own property, and the `cause` chain. A value that is not an object is returned
   * as a cleaned string when it is one, else as it is.
   */
  readonly error = <T>(error: T): T => this.clean(error, new Set()) as T;

  /** For `.catch(redactor.reject)`: rethrows the error cleaned. */
  readonly reject = (error: unknown): never => {
    throw this.error(error);
  };

  /** Cleans an event payload: errors in place, strings in plain objects and arrays (copied). */
  readonly value = <T>(value: T): T => this.clean(value, new Set()) as T;

  private clean(value: unknown, seen: Set<object>): unknown {
    if (typeof value === 'string') return this.text(value);
    if (value === null || typeof value !== 'object' || seen.has(value)) return value;
    seen.add(value);
    if (Array.isArray(value)) return value.map((item) => this.clean(item, seen));
    if (value instanceof Error) return this.cleanError(value, seen);
    if (!isPlainObject(value)) return value;
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[key] = this.clean(item, seen);
    return copy;
  }

  private cleanError(error: Error, seen: Set<object>): Error {
    const record = error as unknown as Record<string, unknown>;
    setOwn(error, 'message', this.text(error.message));
    if (typeof error.stack === 'string') setOwn(error, 'stack', this.text(error.stack));
    for (const key of Object.getOwnPropertyNames(error)) {
      if (key === 'message' || key === 'stack') continue;
      const item = record[key];
      if (key === 'command' && isCommand(item)) {
        setOwn(error, key, { name: item.name, args: redactCommandArgs(item.name, item.args.map((arg) => this.clean(arg, seen))) });
      } else if (typeof item === 'string' || (item !== null && typeof item === 'object')) {
        setOwn(error, key, this.clean(item, seen));
      }
    }
    return error;
  }
}

/**
 * The arguments of a Redis command with its secrets masked: AUTH [user] pw, HELLO … AUTH user pw,
 * MIGRATE … AUTH pw / AUTH2 user pw, CONFIG SET requirepass|masterauth value, ACL SETUSER rules
 * that set passwords or hashes (`>pw`, `<pw`, `#hash`, `!hash`).
 */
export function redactCommandArgs(name: string, args: readonly unknown[]): unknown[] {
  const command = name.toLowerCase();
  const masked = [...args];
  const word = (i: number) => String(args[i] ?? '').toLowerCase();
  const mask = (i: number) => {
    if (i < masked.length) masked[i] = MASK;
  };
  if (command === 'auth') {
    mask(masked.length - 1);
  } else if (command === 'hello' || command === 'migrate') {
    for (let i = 0; i < args.length; i++) {
      if (word(i) === 'auth') mask(i + (command === 'hello' ? 2 : 1));
      if (word(i) === 'auth2') mask(i + 2);
    }
  } else if (command === 'config' && word(0) === 'set') {
    for (let i = 1; i < args.length; i += 2) if (word(i) === 'requirepass' || word(i) === 'masterauth') mask(i + 1);
  } else if (command === 'acl' && word(0) === 'setuser') {
    for (let i = 2; i < args.length; i++) if (/^[<>#!]/.test(String(args[i]))) masked[i] = `${String(args[i])[0]}${MASK}`;
  }
  return masked;
}

/**
 * URL userinfo (with a scheme or without: `:pw@host`, `user:pw@host`) and `password=` /
 * `password: '…'`, in any text. A userinfo runs to the last `@` of the word (ioredis' userinfo
 * ends at the last `@` before the host); a password with a space is only masked as a known secret.
 */
function redactPatterns(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/?#"`<>]*):[^\s"`<>]*@/gi, `$1:${MASK}@`)
    .replace(/(^|[\s"'`(<=,[/])([^\s:@/"'`]*):(?!\/\/)[^\s/"'`]+@(?=[^\s@/"'`]+)/g, `$1$2:${MASK}@`)
    .replace(/([?&;](?:sentinel)?password=)[^&#\s"']*/gi, `$1${MASK}`)
    .replace(/(\b(?:sentinel)?password["']?\s*[:=]\s*)(["'])(?:\\.|(?!\2).)*\2/gi, `$1$2${MASK}$2`);
}

function isCommand(value: unknown): value is { name: string; args: unknown[] } {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { name?: unknown }).name === 'string' &&
    Array.isArray((value as { args?: unknown }).args)
  );
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Sets an own property even when it is not writable (some errors define `message` read-only). */
function setOwn(target: object, key: string, value: unknown): void {
  try {
    const descriptor = Object.getOwnPropertyDescriptor(target, key);
    Object.defineProperty(target, key, {
      value,
      writable: true,
      configurable: true,
      enumerable: descriptor?.enumerable ?? false,
    });
  } catch {
    // a frozen error: left as it is (never ours)
  }
}

/**
 * `client` whose command promises reject with cleaned errors: for services that send many
 * different commands (and scripts) on a connection they were given. Everything else passes through.
 */
export function withRedactedRejections<T extends object>(client: T, redactor: Redactor): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return function (this: unknown, ...args: unknown[]): unknown {
        const result: unknown = Reflect.apply(value, this === receiver ? target : this, args);
        return result instanceof Promise ? result.catch(redactor.reject) : result;
      };
    },
  });
}
