import { RedisStreamsOptionError } from '../errors.js';
import { redactUrl } from '../redaction.js';
import { clusterConnectionOption } from './cluster-connection.js';
import { isRedisClient, type RedisConnection } from './connection.js';
import { isSentinelOptions, isSentinelUrl, sentinelConnectionOption, sentinelUrlOptions } from './sentinel-connection.js';

const ACCEPTED =
  'must be a redis:// or rediss:// URL, a unix:///path/to/redis.sock URL, a redis+sentinel://host:port,host:port/primaryName URL, ioredis options ({ host, port }, { path } or { sentinels, name }), { cluster: { nodes, options } } or a Redis/Cluster client';

/**
 * Why `keyPrefix` is refused: ioredis prefixes the keys it sends but not the stream names in
 * XREADGROUP replies, so entries would be fetched into the pending list and never handled (and the
 * scripts and the CLI would look at other keys). The transport's own prefix covers the need.
 */
const KEY_PREFIX =
  'ioredis keyPrefix is not supported (stream names in replies are not prefixed, so entries would be fetched and never handled); use the server\'s "prefix" and the client\'s "streamPrefix" instead';

/**
 * Checks a connection option in a constructor, before anything connects: the accepted forms are
 * `redis://` and `rediss://` URLs, `unix:///path` (turned into the socket path ioredis takes),
 * `redis+sentinel://` / `rediss+sentinel://` URLs (see sentinel-connection.ts), ioredis options
 * (Sentinel ones checked too), and a Redis/Cluster client. Anything else (`http://…`, `not a url`, a bare
 * host, which ioredis would silently take for a socket path or a host name) throws
 * `RedisStreamsOptionError` naming `option`. `keyPrefix` is refused in every form.
 */
export function connectionOption(option: string, value: unknown): RedisConnection | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return urlOption(option, value);
  if (isRedisClient(value)) {
    const options = value.options as { keyPrefix?: unknown; redisOptions?: { keyPrefix?: unknown } };
    if (hasKeyPrefix(options) || hasKeyPrefix(options.redisOptions)) throw new RedisStreamsOptionError(`${option}.keyPrefix`, KEY_PREFIX);
    return value;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || !isPlainObject(value)) {
    throw new RedisStreamsOptionError(option, `${ACCEPTED}; got ${kindOf(value)}`);
  }
  const options = value as Record<string, unknown>;
  if ('cluster' in options) return clusterConnectionOption(option, options, KEY_PREFIX);
  if (hasKeyPrefix(options)) throw new RedisStreamsOptionError(`${option}.keyPrefix`, KEY_PREFIX);
  if (isSentinelOptions(options)) sentinelConnectionOption(option, options);
  if (options.host !== undefined && (typeof options.host !== 'string' || options.host.length === 0)) {
    throw new RedisStreamsOptionError(`${option}.host`, 'must be a non-empty string');
  }
  if (options.port !== undefined && !(Number.isInteger(options.port) && (options.port as number) >= 0 && (options.port as number) <= 65_535)) {
    throw new RedisStreamsOptionError(`${option}.port`, 'must be an integer between 0 and 65535');
  }
  if (options.path !== undefined && (typeof options.path !== 'string' || options.path.length === 0)) {
    throw new RedisStreamsOptionError(`${option}.path`, 'must be the path of a Unix socket');
  }
  return value as RedisConnection;
}

function urlOption(option: string, value: string): string {
  const shown = JSON.stringify(redactUrl(value));
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme === 'unix') {
    const path = value.slice('unix://'.length);
    if (!path.startsWith('/') || path.length < 2) {
      throw new RedisStreamsOptionError(option, `a unix:// URL needs an absolute socket path (unix:///run/redis.sock); got ${shown}`);
    }
    if (/[?&]keyPrefix=/i.test(path)) throw new RedisStreamsOptionError(`${option}.keyPrefix`, KEY_PREFIX);
    // ioredis takes a string starting with "/" as a socket path (its query as options).
    return path;
  }
  if (isSentinelUrl(value)) {
    // Checked now, parsed again when a connection opens: the URL stays what the user wrote (and what logs show, masked).
    sentinelUrlOptions(option, value, KEY_PREFIX);
    return value;
  }
  if (scheme !== 'redis' && scheme !== 'rediss') throw new RedisStreamsOptionError(option, `${ACCEPTED}; got ${shown}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new RedisStreamsOptionError(option, `is not a valid URL: ${shown}`);
  }
  if (url.hostname.length === 0) throw new RedisStreamsOptionError(option, `names no host: ${shown}`);
  if (!/^\/?(\d+)?$/.test(url.pathname)) throw new RedisStreamsOptionError(option, `its path must be a database number (/0): ${shown}`);
  if (url.searchParams.has('keyPrefix')) throw new RedisStreamsOptionError(`${option}.keyPrefix`, KEY_PREFIX);
  return value;
}

function hasKeyPrefix(options: unknown): boolean {
  const keyPrefix = (options as { keyPrefix?: unknown } | undefined)?.keyPrefix;
  return keyPrefix !== undefined && keyPrefix !== '';
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? `an instance of ${(value as object).constructor?.name ?? 'a class'}` : typeof value;
}
