import { isRedisClient, type RedisConnection } from './connection.js';

/**
 * A connection option handed to a worker thread (structured clone) so it opens a connection of
 * its own exactly as `openConnection` would here, or the reason it cannot be: a client instance,
 * or options holding a function (a custom `retryStrategy`, `natMap`, TLS `checkServerIdentity`)
 * or another object a clone cannot carry. Buffers (TLS keys and certificates) can.
 */
export type ThreadConnection = { readonly connection: RedisConnection | undefined } | { readonly unavailable: string };

export function threadConnectionOf(connection: RedisConnection | undefined, option = 'connection'): ThreadConnection {
  if (connection === undefined || typeof connection === 'string') return { connection };
  if (isRedisClient(connection)) return { unavailable: `${option} is a client instance, which cannot be passed to another thread` };
  const path = firstUncloneable(connection, option, new Set());
  return path === undefined ? { connection } : { unavailable: `${option} holds ${path}, which cannot be passed to another thread` };
}

/** Where `value` holds something other than data (a function, a class instance), or undefined. */
function firstUncloneable(value: unknown, path: string, seen: Set<object>): string | undefined {
  if (typeof value === 'function') return `a function at ${path}`;
  if (value === null || typeof value !== 'object') return undefined;
  if (ArrayBuffer.isView(value)) return undefined;
  if (seen.has(value)) return undefined;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstUncloneable(value[i], `${path}[${i}]`, seen);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return `an object of class ${(value as object).constructor?.name ?? 'unknown'} at ${path}`;
  for (const [key, item] of Object.entries(value)) {
    const found = firstUncloneable(item, `${path}.${key}`, seen);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The option as the thread received it, with its Buffers back (a clone turns them into plain Uint8Arrays). */
export function reviveThreadConnection<T>(value: T): T {
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength) as T;
  if (Array.isArray(value)) return value.map(reviveThreadConnection) as T;
  if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, reviveThreadConnection(item)])) as T;
  }
  return value;
}
