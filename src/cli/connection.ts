import type { Redis } from 'ioredis';
import { closeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { connectionOption } from '../redis/connection-option.js';
import { connectionSecrets, redactUrl } from '../redaction.js';
import { CliError } from './errors.js';
import type { CliIo } from './io.js';

export const DEFAULT_URL = 'redis://127.0.0.1:6379';
const CONNECT_TIMEOUT_MS = 5_000;

export interface ConnectionFlags {
  url?: string;
  /** `--cluster`: treat the URL as one node of a Redis Cluster without asking it. */
  cluster?: boolean;
}

/** `--url`, else `REDIS_URL`, else the local default. */
export function resolveUrl(flags: ConnectionFlags, io: CliIo): string {
  return flags.url ?? io.env.REDIS_URL ?? DEFAULT_URL;
}

/** The URL's passwords (raw and decoded, with or without a scheme), to be masked in anything the CLI prints. */
export function secretsOf(url: string): string[] {
  return connectionSecrets(url);
}

/**
 * Connects once, failing fast (no retries, no offline queue), runs `work`, and always closes.
 * A CLI run must end with an answer, not wait for a server that is not there. When the node says
 * `cluster_enabled:1` (or `cluster` forces it), `work` gets a Redis Cluster client started from
 * that node, so every key is served by its own master whichever node the URL names.
 */
export async function withRedis<T>(url: string, work: (redis: RedisClient) => Promise<T>, cluster = false): Promise<T> {
  // Same accepted forms as the transport (redis://, rediss://, unix:///path): checked before connecting.
  const connection = connectionOption('url', url);
  const opened = openConnection(connection, 'cli', FAIL_FAST);
  const redis = opened.client as Redis;
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => (lastError = error));
  let clustered: OpenedConnection | undefined;
  try {
    try {
      await redis.connect();
    } catch (error) {
      throw new CliError(`cannot connect to ${redactUrl(url)}: ${connectFailure(lastError ?? error)}`);
    }
    if (!cluster && !(await clusterEnabled(redis))) return await work(redis);
    clustered = await openCluster(url);
    await closeConnection(opened);
    return await work(clustered.client);
  } finally {
    await closeConnection(opened);
    await closeConnection(clustered);
  }
}

const FAIL_FAST = {
  connectTimeout: CONNECT_TIMEOUT_MS,
  maxRetriesPerRequest: 1,
  retryStrategy: () => null,
  // Through sentinels (redis+sentinel://): one pass over them, not a retry loop that never answers.
  sentinelRetryStrategy: () => null,
  // A run lasts a moment: no subscriber connection to every sentinel.
  failoverDetector: false,
  enableOfflineQueue: false,
  enableReadyCheck: true,
};

/** `INFO cluster` says `cluster_enabled:1`; a server that refuses INFO is taken as standalone. */
async function clusterEnabled(redis: Redis): Promise<boolean> {
  try {
    return /^cluster_enabled:1\s*$/m.test(await redis.info('cluster'));
  } catch {
    return false;
  }
}

async function openCluster(url: string): Promise<OpenedConnection> {
  if (!/^rediss?:\/\//i.test(url)) throw new CliError(`a Redis Cluster is reached by a redis:// or rediss:// URL, not ${redactUrl(url)}`);
  let connection;
  try {
    const node = new URL(url);
    node.pathname = '';
    connection = connectionOption('url', { cluster: { nodes: [node.toString()], options: { clusterRetryStrategy: () => null } } });
  } catch (error) {
    throw new CliError(`${(error as Error).message}`);
  }
  const opened = openConnection(connection, 'cli', { ...FAIL_FAST, enableOfflineQueue: true });
  let lastError: Error | undefined;
  opened.client.on('error', (error: Error) => (lastError = error));
  opened.client.on('node error', (error: Error) => (lastError = error));
  try {
    await opened.client.connect();
  } catch (error) {
    await closeConnection(opened);
    throw new CliError(`cannot connect to the Redis Cluster of ${redactUrl(url)}: ${connectFailure(lastError ?? error)}`);
  }
  return opened;
}

function connectFailure(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT') return `no answer within ${CONNECT_TIMEOUT_MS} ms`;
  return error instanceof Error ? error.message : String(error);
}
