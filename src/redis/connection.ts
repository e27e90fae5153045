import type { RedisOptions } from 'ioredis';
import { Cluster, Redis } from './ioredis.js';
import { redactUrl } from '../redaction.js';
import { withTimeout } from '../timeout.js';
import { CLOSE_BUDGET_MS, type CloseBudget } from './close-budget.js';
import { judgeCommandTimeoutsAfterReads } from './command-timeout.js';
import { dropFailoverDetectorOnClose } from './failover-detector-guard.js';
import { absorbLateSocketErrors } from './late-socket-error-guard.js';
import { dropSettledQueuedCommands } from './settled-command-guard.js';
import { createCluster, isClusterConnection, splitClusterOverrides, type RedisClusterConnection } from './cluster-connection.js';
import { isSentinelUrl, sentinelUrlOptions, withSentinelDefaults } from './sentinel-connection.js';

/**
 * Where to connect: a URL (`redis://`, `rediss://`, Sentinel: `redis+sentinel://`), ioredis
 * options (Sentinel: `sentinels` + `name`), a Cluster's node URLs and options (`{ cluster: { nodes, options } }`), or an existing client.
 */
export type RedisConnection = string | RedisOptions | RedisClusterConnection | Redis | Cluster;

export type RedisClient = Redis | Cluster;

export interface OpenedConnection {
  readonly client: RedisClient;
  /** True when we created the client and must close it; a client the user passed in stays theirs. */
  readonly owned: boolean;
}

export function isRedisClient(value: unknown): value is RedisClient {
  return value instanceof Redis || value instanceof Cluster;
}

/**
 * Opens a connection for one role. `dedicated` forces a connection of our own even when the user
 * passed a client (blocking reads must not share a socket with other commands). On a client we
 * create, a `commandTimeout` is judged only after pending replies were read (./command-timeout.ts),
 * a Sentinel connection drops its failover detector when it closes (./failover-detector-guard.ts),
 * a socket's second error is absorbed instead of crashing the process (./late-socket-error-guard.ts),
 * and a Cluster node connection does not write a command that timed out in its queue (./settled-command-guard.ts).
 */
export function openConnection(
  connection: RedisConnection | undefined,
  role: string,
  overrides: RedisOptions = {},
  dedicated = false,
): OpenedConnection {
  const opened = createConnection(connection, role, overrides, dedicated);
  if (opened.owned) {
    judgeCommandTimeoutsAfterReads(opened.client);
    dropFailoverDetectorOnClose(opened.client);
    absorbLateSocketErrors(opened.client);
    dropSettledQueuedCommands(opened.client);
  }
  return opened;
}

function createConnection(
  connection: RedisConnection | undefined,
  role: string,
  overrides: RedisOptions = {},
  dedicated = false,
): OpenedConnection {
  const connectionName = `nestjs-redis-streams:${role}`;
  if (isRedisClient(connection)) {
    if (!dedicated) return { client: connection, owned: false };
    const client =
      connection instanceof Cluster
        ? duplicateCluster(connection, overrides, connectionName)
        : connection.duplicate({ ...overrides, connectionName });
    return { client, owned: true };
  }
  if (isClusterConnection(connection)) return { client: createCluster(connection, overrides, connectionName), owned: true };
  const options = { lazyConnect: true, ...overrides, connectionName };
  if (typeof connection === 'string') {
    // A Sentinel URL was checked by connectionOption(); parsed here into ioredis' options.
    const client = isSentinelUrl(connection)
      ? new Redis(withSentinelDefaults({ ...sentinelUrlOptions('connection', connection, 'keyPrefix is not supported'), ...options }))
      : new Redis(connection, options);
    return { client, owned: true };
  }
  // Sentinel defaults see the merged options: our connectTimeout bounds their sentinelCommandTimeout.
  return { client: new Redis(withSentinelDefaults({ ...connection, ...options })), owned: true };
}

function duplicateCluster(cluster: Cluster, overrides: RedisOptions, connectionName: string): Cluster {
  const split = splitClusterOverrides(overrides);
  return cluster.duplicate(undefined, { ...split.cluster, redisOptions: { ...cluster.options.redisOptions, ...split.node, connectionName } });
}

/** True when `connection` makes (or is) a Redis Cluster client. */
export function isClusterConnectionOption(connection: RedisConnection | undefined): boolean {
  return connection instanceof Cluster || isClusterConnection(connection);
}

/**
 * Closes a connection we own: `quit` first so queued commands are answered, `disconnect` if that
 * fails or takes longer than `quitTimeoutMs` (0: disconnect at once, when nothing is queued or
 * Redis was found not to answer).
 */
export async function closeConnection(opened: OpenedConnection | undefined, quitTimeoutMs = CLOSE_BUDGET_MS): Promise<void> {
  if (!opened?.owned) return;
  const { client } = opened;
  if (client.status === 'end') return;
  try {
    if (client.status === 'ready' && quitTimeoutMs > 0) {
      await withTimeout(client.quit(), quitTimeoutMs, 'QUIT');
    }
  } catch {
    // fall through to a hard disconnect
  }
  client.disconnect(false);
}

/**
 * Closes `connections` together (`closeConnection`) within what is left of `budget`: one step of
 * it. Closed one group after another, a later group's QUITs go out after the earlier ones ended,
 * and wait only what those left.
 */
export async function closeConnections(connections: ReadonlyArray<OpenedConnection | undefined>, budget: CloseBudget): Promise<void> {
  await budget.spend((remainingMs) => Promise.all(connections.map((opened) => closeConnection(opened, remainingMs))));
}

// Masking lives in the one redaction layer; re-exported for callers of this module.
export { redactUrl, urlSecrets } from '../redaction.js';

/** Describes a connection for log lines without credentials. */
export function describeConnection(connection: RedisConnection | undefined): string {
  if (connection === undefined) return 'redis://127.0.0.1:6379';
  if (typeof connection === 'string') return redactUrl(connection);
  if (isRedisClient(connection)) return connection instanceof Cluster ? 'a Redis Cluster client' : 'a Redis client';
  if (isClusterConnection(connection)) return `the Redis Cluster of ${connection.cluster.nodes.map(redactUrl).join(', ')}`;
  if (connection.sentinels != null) {
    const sentinels = connection.sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).join(', ');
    return `the primary "${connection.name ?? ''}" of the sentinels ${sentinels}`;
  }
  const host = connection.host ?? '127.0.0.1';
  const port = connection.port ?? 6379;
  return connection.path ? `unix:${connection.path}` : `${host}:${port}`;
}
