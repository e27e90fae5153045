import { Redis, type Cluster } from './ioredis.js';

/**
 * The part of ioredis' SentinelConnector (ioredis 6 internals, not public API) this guard reaches:
 * `connector.failoverDetector`, which subscribes to `+switch-master` on the sentinels and calls
 * `connector.disconnect()` when it hears one.
 */
interface FailoverDetectorLike {
  cleanup(): void;
}

/**
 * On a Sentinel connection we own, drops the failover detector of a connection as soon as that
 * connection closes.
 *
 * Why: ioredis keeps the detector of the closed connection until the next one connects. When the
 * primary dies, the reconnect asks a sentinel for the new primary; if `+switch-master` arrives
 * meanwhile (a slow or frozen sentinel makes that wait long), the stale detector calls
 * `connector.disconnect()`, which cancels the reconnect under way: ioredis then gives up with
 * "Connection is closed." and the status `end`, and a reader on it stops for good. A closed
 * connection has nothing left to leave; the reconnect resolves the primary by itself, and ioredis
 * makes a fresh detector for the next connection.
 *
 * Private fields: if a later ioredis renames or drops them, this does nothing (ioredis' own
 * behaviour, with the defect above) instead of failing.
 */
export function dropFailoverDetectorOnClose(client: Redis | Cluster): void {
  if (!(client instanceof Redis) || client.options.sentinels == null || !client.options.failoverDetector) return;
  client.on('close', () => dropFailoverDetector(client));
}

function dropFailoverDetector(client: Redis): void {
  const connector = (client as unknown as { connector?: unknown }).connector;
  if (connector === null || typeof connector !== 'object' || !('failoverDetector' in connector)) return;
  const holder = connector as { failoverDetector: unknown };
  const detector = holder.failoverDetector;
  if (!isFailoverDetector(detector)) return;
  holder.failoverDetector = null;
  detector.cleanup();
}

function isFailoverDetector(value: unknown): value is FailoverDetectorLike {
  return value !== null && typeof value === 'object' && typeof (value as { cleanup?: unknown }).cleanup === 'function';
}
