import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { redactUrl } from '../redaction.js';
import { withTimeout } from '../timeout.js';

/** Where to connect: a URL (`redis://`, `rediss://`), ioredis options, or an existing client. */
export type RedisConnection = string | RedisOptions | Redis | Cluster;

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
 * passed a client (blocking reads must not share a socket with other commands).
 */
export function openConnection(
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
  const options = { lazyConnect: true, ...overrides, connectionName };
  const client =
    typeof connection === 'string' ? new Redis(connection, options) : new Redis({ ...connection, ...options });
  return { client, owned: true };
}

/**
 * Options a Cluster reads at its own level: inside `redisOptions` they would only reach its node
 * connections (a `lazyConnect` there leaves the Cluster itself connecting at once).
 */
const CLUSTER_LEVEL = ['lazyConnect', 'enableOfflineQueue', 'enableAutoPipelining', 'enableReadyCheck'] as const;

function duplicateCluster(cluster: Cluster, overrides: RedisOptions, connectionName: string): Cluster {
  const perNode: RedisOptions = { ...cluster.options.redisOptions, ...overrides, connectionName };
  const clusterLevel: Record<string, unknown> = {};
  for (const name of CLUSTER_LEVEL) {
    if (overrides[name] === undefined) continue;
    clusterLevel[name] = overrides[name];
    delete perNode[name];
  }
  return cluster.duplicate(undefined, { ...clusterLevel, redisOptions: perNode });
}

/** Closes a connection we own; `quit` first so queued replies arrive, `disconnect` if that fails. */
export async function closeConnection(opened: OpenedConnection | undefined): Promise<void> {
  if (!opened?.owned) return;
  const { client } = opened;
  if (client.status === 'end') return;
  try {
    if (client.status === 'ready') {
      await withTimeout(client.quit(), 2_000, 'QUIT');
    }
  } catch {
    // fall through to a hard disconnect
  }
  client.disconnect(false);
}

// Masking lives in the one redaction layer; re-exported for callers of this module.
export { redactUrl, urlSecrets } from '../redaction.js';

/** Describes a connection for log lines without credentials. */
export function describeConnection(connection: RedisConnection | undefined): string {
  if (connection === undefined) return 'redis://127.0.0.1:6379';
  if (typeof connection === 'string') return redactUrl(connection);
  if (isRedisClient(connection)) return connection instanceof Cluster ? 'a Redis Cluster client' : 'a Redis client';
  const host = connection.host ?? '127.0.0.1';
  const port = connection.port ?? 6379;
  return connection.path ? `unix:${connection.path}` : `${host}:${port}`;
}
