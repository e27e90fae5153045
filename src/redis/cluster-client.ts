import type { RedisClient } from './connection.js';
import type { Cluster } from './ioredis.js';

/**
 * Whether `client` is a Redis Cluster client. ioredis' own flag, not `instanceof Cluster`: asking
 * loads no ioredis (the CLI's --help loads none), and a Cluster from another copy of ioredis
 * counts too.
 */
export function isClusterClient(client: RedisClient): client is Cluster {
  return client.isCluster;
}
