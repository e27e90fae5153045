import type { Redis } from 'ioredis';
import { connectFailure } from '../redis/connect-failure.js';
import { closeConnection, openConnection, type OpenedConnection, type RedisClient } from '../redis/connection.js';
import { untilReady } from '../redis/ready.js';
import { connectionOption } from '../redis/connection-option.js';
import { connectionSecrets, redactUrl } from '../redaction.js';
import { startTimeoutVerdict } from '../timeout.js';
import { CliError } from './errors.js';
import type { CliIo } from './io.js';
import { errorMessage } from '../error-message.js';

export const DEFAULT_URL = 'redis://127.0.0.1:6379';
/** `--timeout`: how long connecting, and then each command, may go unanswered. */
export const DEFAULT_TIMEOUT_MS = 5_000;

export interface ConnectionFlags {
  url?: string;
  /** `--cluster`: treat the URL as one node of a Redis Cluster without asking it. */
  cluster?: boolean;
}

export interface SessionOptions {
  /** Treat the URL as one node of a Redis Cluster without asking it. */
  cluster?: boolean;
  /** Deadline of connecting (as a whole) and of every command; default DEFAULT_TIMEOUT_MS. */
  timeoutMs?: number;
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
 *
 * A server that accepts the TCP connection and then answers nothing (paused, swapped out, a
 * half-open link) is given `timeoutMs`: once for connecting as a whole (TCP, TLS, handshake,
 * ready check, cluster discovery: `connectTimeout` alone ends at the TCP handshake), then again
 * for every command (ioredis' `commandTimeout`). Past it the run fails with one line, and the
 * connections are dropped rather than QUIT, which the same server would not answer either.
 */
export async function withRedis<T>(url: string, work: (redis: RedisClient) => Promise<T>, options: SessionOptions = {}): Promise<T> {
  const { cluster = false, timeoutMs = DEFAULT_TIMEOUT_MS } = options;
  // Same accepted forms as the transport (redis://, rediss://, unix:///path): checked before connecting.
  const connection = connectionOption('url', url);
  const overrides = failFast(timeoutMs);
  const opened = openConnection(connection, 'cli', overrides);
  const redis = opened.client as Redis;
  let lastError: Error | undefined;
  redis.on('error', (error: Error) => (lastError = error));
  let clustered: OpenedConnection | undefined;
  let unanswered = false;
  const connected = async (): Promise<RedisClient> => {
    try {
      await redis.connect();
    } catch (error) {
      throw new CliError(`cannot connect to ${redactUrl(url)}: ${connectFailure(error, lastError, (cause) => inCliWords(cause, timeoutMs)).reason}`);
    }
    if (!cluster && !(await clusterEnabled(redis))) return redis;
    // Past the deadline, this run has already failed: open nothing more.
    if (unanswered) return redis;
    // Assigned before it connects, so that a deadline in the middle drops it too.
    clustered = clusterOf(url, overrides);
    await connectCluster(clustered, url, timeoutMs);
    await closeConnection(opened);
    return clustered.client;
  };
  try {
    const client = await withDeadline(connected(), timeoutMs, () => {
      unanswered = true;
      return new CliError(`cannot connect to ${redactUrl(url)}: ${noAnswer(timeoutMs)}`);
    });
    return await work(client);
  } catch (error) {
    if (!isCommandTimeout(error)) throw error;
    unanswered = true;
    // "Command timed out" means nothing to an operator: which server, after how long, which flag.
    throw new CliError((error as Error).message.replace(COMMAND_TIMED_OUT, `no answer from ${redactUrl(url)} within ${timeoutMs} ms (--timeout)`));
  } finally {
    for (const each of [opened, clustered]) {
      if (unanswered) each?.client.disconnect(false);
      else await closeConnection(each);
    }
  }
}

/** ioredis' message for a command past `commandTimeout` (also when our judged timer rejects it). */
const COMMAND_TIMED_OUT = 'Command timed out';

function isCommandTimeout(error: unknown): boolean {
  return error instanceof Error && error.message.includes(COMMAND_TIMED_OUT);
}

function noAnswer(timeoutMs: number): string {
  return `no answer within ${timeoutMs} ms (--timeout)`;
}

/** Settles like `promise`, or rejects with `onTimeout()`'s error after `ms`; the timer never outlives it. */
async function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let cancel: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    // Judged after one more read of the sockets, like every command timeout (../timeout.ts).
    cancel = startTimeoutVerdict(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    cancel?.();
    // The connect attempt, failed after the deadline, has nobody left to tell.
    promise.catch(() => undefined);
  }
}

const failFast = (timeoutMs: number) => ({
  connectTimeout: timeoutMs,
  commandTimeout: timeoutMs,
  maxRetriesPerRequest: 1,
  retryStrategy: () => null,
  // Through sentinels (redis+sentinel://): one pass over them, not a retry loop that never answers.
  sentinelRetryStrategy: () => null,
  // A run lasts a moment: no subscriber connection to every sentinel.
  failoverDetector: false,
  enableOfflineQueue: false,
  enableReadyCheck: true,
  // A closed socket is destroyed after this if the server does not close its end; a paused one
  // never does, and ioredis' 2 s would keep the process alive past the deadline. When the CLI
  // disconnects, QUIT was answered or the server gave no answer: nothing is left to wait for.
  disconnectTimeout: 0,
});

/** `INFO cluster` says `cluster_enabled:1`; a server that refuses INFO is taken as standalone. */
async function clusterEnabled(redis: Redis): Promise<boolean> {
  try {
    return /^cluster_enabled:1\s*$/m.test(await redis.info('cluster'));
  } catch {
    return false;
  }
}

function clusterOf(url: string, overrides: ReturnType<typeof failFast>): OpenedConnection {
  if (!/^rediss?:\/\//i.test(url)) throw new CliError(`a Redis Cluster is reached by a redis:// or rediss:// URL, not ${redactUrl(url)}`);
  let connection;
  try {
    const node = new URL(url);
    node.pathname = '';
    connection = connectionOption('url', { cluster: { nodes: [node.toString()], options: { clusterRetryStrategy: () => null } } });
  } catch (error) {
    throw new CliError(`${(error as Error).message}`);
  }
  return openConnection(connection, 'cli', { ...overrides, enableOfflineQueue: true });
}

async function connectCluster(opened: OpenedConnection, url: string, timeoutMs: number): Promise<void> {
  let lastError: Error | undefined;
  opened.client.on('error', (error: Error) => (lastError = error));
  opened.client.on('node error', (error: Error) => (lastError = error));
  try {
    await untilReady(opened.client);
  } catch (error) {
    const { reason } = connectFailure(error, lastError, (cause) => inCliWords(cause, timeoutMs));
    throw new CliError(`cannot connect to the Redis Cluster of ${redactUrl(url)}: ${reason}`);
  }
}

/** A connection's error as an operator reads it: which failure, and the flag that bounds the wait. */
function inCliWords(error: unknown, timeoutMs: number): string {
  const code = (error as { code?: string }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  // No TCP handshake within connectTimeout, or a handshake / ready-check command past commandTimeout.
  if (code === 'ETIMEDOUT' || isCommandTimeout(error)) return noAnswer(timeoutMs);
  return errorMessage(error);
}
