import type { ClusterOptions, RedisOptions } from 'ioredis';
import { Cluster } from './ioredis.js';
import { RedisStreamsOptionError } from '../errors.js';
import { redactUrl } from '../redaction.js';

/**
 * A Redis Cluster described by configuration: the URLs of some of its nodes (any node will do:
 * the rest is discovered) and ioredis Cluster options (`natMap`, `redisOptions`, ...). A password
 * or user in the URLs, and TLS for `rediss://`, apply to every node unless `options.redisOptions`
 * sets them.
 */
export interface RedisClusterConnection {
  cluster: {
    nodes: readonly string[];
    options?: ClusterOptions;
  };
}

export function isClusterConnection(value: unknown): value is RedisClusterConnection {
  // Redis and Cluster instances have a cluster() method (the CLUSTER command): not an object.
  const cluster = (value as { cluster?: unknown } | null | undefined)?.cluster;
  return cluster !== null && typeof cluster === 'object';
}

/** Options a Cluster reads at its own level; inside `redisOptions` they would only reach its nodes. */
export const CLUSTER_LEVEL_OPTIONS = ['lazyConnect', 'enableOfflineQueue', 'enableAutoPipelining', 'enableReadyCheck', 'retryDelayOnFailover'] as const;

/** Splits connection overrides into the Cluster's own options and those of every node connection. */
export function splitClusterOverrides(overrides: RedisOptions): { cluster: Partial<ClusterOptions>; node: RedisOptions } {
  const node: Record<string, unknown> = { ...overrides };
  const cluster: Record<string, unknown> = {};
  for (const name of CLUSTER_LEVEL_OPTIONS) {
    if (node[name] === undefined) continue;
    cluster[name] = node[name];
    delete node[name];
  }
  return { cluster: cluster as Partial<ClusterOptions>, node: node as RedisOptions };
}

/** A new (lazy unless overridden) Cluster for `connection`, its nodes named `connectionName`. */
export function createCluster(connection: RedisClusterConnection, overrides: RedisOptions, connectionName: string): Cluster {
  const { nodes, options = {} } = connection.cluster;
  const fromUrls = nodeOptionsOf(nodes);
  const split = splitClusterOverrides(overrides);
  return new Cluster(
    nodes.map((url) => {
      const parsed = new URL(url);
      return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: parsed.port === '' ? 6379 : Number(parsed.port) };
    }),
    {
      lazyConnect: true,
      ...options,
      ...split.cluster,
      redisOptions: { ...fromUrls, ...options.redisOptions, ...split.node, connectionName },
    },
  );
}

/** Credentials and TLS the node URLs carry (the first URL that has them), for every node. */
function nodeOptionsOf(nodes: readonly string[]): RedisOptions {
  const options: RedisOptions = {};
  for (const url of nodes) {
    const parsed = new URL(url);
    if (parsed.protocol === 'rediss:') options.tls ??= {};
    if (parsed.password !== '') options.password ??= decodeURIComponent(parsed.password);
    if (parsed.username !== '') options.username ??= decodeURIComponent(parsed.username);
  }
  return options;
}

/**
 * Checks `{ cluster: { nodes, options } }` before anything connects, naming the faulty part
 * (`connection.cluster.nodes[1]`, `connection.cluster.options.redisOptions.keyPrefix`, ...).
 */
export function clusterConnectionOption(option: string, value: Record<string, unknown>, keyPrefixReason: string): RedisClusterConnection {
  const extra = Object.keys(value).filter((key) => key !== 'cluster');
  if (extra.length > 0) {
    throw new RedisStreamsOptionError(`${option}.${extra[0]}`, 'cannot be combined with "cluster" (set node options in cluster.options.redisOptions)');
  }
  const cluster = value.cluster as Record<string, unknown> | null;
  if (cluster === null || typeof cluster !== 'object' || Array.isArray(cluster)) {
    throw new RedisStreamsOptionError(`${option}.cluster`, 'must be { nodes: ["redis://host:port", ...], options?: ClusterOptions }');
  }
  const unknown = Object.keys(cluster).filter((key) => key !== 'nodes' && key !== 'options');
  if (unknown.length > 0) throw new RedisStreamsOptionError(`${option}.cluster.${unknown[0]}`, 'is not an option (nodes, options)');
  const nodes = cluster.nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedisStreamsOptionError(`${option}.cluster.nodes`, 'must be a non-empty list of node URLs (redis://host:port or rediss://host:port)');
  }
  const schemes = new Set<string>();
  nodes.forEach((node: unknown, i) => {
    const name = `${option}.cluster.nodes[${i}]`;
    if (typeof node !== 'string') throw new RedisStreamsOptionError(name, `must be a redis:// or rediss:// URL; got ${typeof node}`);
    const shown = JSON.stringify(redactUrl(node));
    let url: URL;
    try {
      url = new URL(node);
    } catch {
      throw new RedisStreamsOptionError(name, `is not a valid URL: ${shown}`);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new RedisStreamsOptionError(name, `must be a redis:// or rediss:// URL; got ${shown}`);
    if (url.hostname.length === 0) throw new RedisStreamsOptionError(name, `names no host: ${shown}`);
    if (!/^\/?(0)?$/.test(url.pathname)) throw new RedisStreamsOptionError(name, `a cluster has only database 0: ${shown}`);
    if (url.search !== '') throw new RedisStreamsOptionError(name, `takes no query options (use cluster.options): ${shown}`);
    schemes.add(url.protocol);
  });
  if (schemes.size > 1) throw new RedisStreamsOptionError(`${option}.cluster.nodes`, 'mixes redis:// and rediss:// URLs: every node of a cluster uses TLS or none does');
  const options = cluster.options;
  if (options !== undefined) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new RedisStreamsOptionError(`${option}.cluster.options`, 'must be ioredis Cluster options (an object)');
    }
    const redisOptions = (options as { redisOptions?: unknown }).redisOptions;
    if (redisOptions !== undefined && (redisOptions === null || typeof redisOptions !== 'object' || Array.isArray(redisOptions))) {
      throw new RedisStreamsOptionError(`${option}.cluster.options.redisOptions`, 'must be ioredis options for every node (an object)');
    }
    const keyPrefix = (options as { keyPrefix?: unknown }).keyPrefix ?? (redisOptions as { keyPrefix?: unknown } | undefined)?.keyPrefix;
    if (keyPrefix !== undefined && keyPrefix !== '') {
      const where = (options as { keyPrefix?: unknown }).keyPrefix !== undefined ? 'options' : 'options.redisOptions';
      throw new RedisStreamsOptionError(`${option}.cluster.${where}.keyPrefix`, keyPrefixReason);
    }
    const natMap = (options as { natMap?: unknown }).natMap;
    if (natMap !== undefined && typeof natMap !== 'function' && (natMap === null || typeof natMap !== 'object' || Array.isArray(natMap))) {
      throw new RedisStreamsOptionError(`${option}.cluster.options.natMap`, 'must map "host:port" to { host, port } (an object or a function)');
    }
  }
  return value as unknown as RedisClusterConnection;
}
