import type { Redis } from 'ioredis';
import { closeConnection, openConnection } from '../redis/connection.js';
import { connectionOption } from '../redis/connection-option.js';
import { connectionSecrets, redactUrl } from '../redaction.js';
import { CliError } from './errors.js';
import type { CliIo } from './io.js';

export const DEFAULT_URL = 'redis://127.0.0.1:6379';
const CONNECT_TIMEOUT_MS = 5_000;

export interface ConnectionFlags {
  url?: string;
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
 * A CLI run must end with an answer, not wait for a server that is not there.
 */
export async function withRedis<T>(url: string, work: (redis: Redis) => Promise<T>): Promise<T> {
  // Same accepted forms as the transport (redis://, rediss://, unix:///path): checked before connecting.
  const connection = connectionOption('url', url);
  const opened = openConnection(connection, 'cli', {
    connectTimeout: CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: true,
  });
  const redis = opened.client as Redis;
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => (lastError = error));
  try {
    try {
      await redis.connect();
    } catch (error) {
      throw new CliError(`cannot connect to ${redactUrl(url)}: ${connectFailure(lastError ?? error)}`);
    }
    return await work(redis);
  } finally {
    await closeConnection(opened);
  }
}

function connectFailure(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'ETIMEDOUT') return `no answer within ${CONNECT_TIMEOUT_MS} ms`;
  return error instanceof Error ? error.message : String(error);
}
