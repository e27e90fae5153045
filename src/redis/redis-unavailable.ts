import { connectionErrorCode, RedisStreamsConnectionError } from '../errors.js';

/** ioredis' rejection of a command sent while the connection is down, with `enableOfflineQueue: false`. */
export const NOT_WRITEABLE = "Stream isn't writeable and enableOfflineQueue options is false";

/** ioredis' errors of a command sent while the connection is down, or lost with it; they carry no code. */
export function isConnectionDown(error: unknown): boolean {
  const message = error instanceof Error ? error.message : undefined;
  return message === NOT_WRITEABLE || message === 'Connection is closed.';
}

/**
 * ioredis' words for "no node to send to" (a Cluster without a slot map, disconnected, or not
 * ready with `enableOfflineQueue: false`), and for a pipeline's commands that a closed
 * connection left unanswered and that it may not resend.
 */
const NO_CONNECTION_MESSAGES = new Set([
  'None of startup nodes is available',
  "Cluster isn't ready and enableOfflineQueue options is false",
  'Cluster is disconnected.',
  'Command aborted due to connection close',
]);

/**
 * ioredis' errors (by class name: ioredis 6 exports not all of them) of giving up for the
 * connection's sake: a command retried on every reconnect until `maxRetriesPerRequest`, a
 * Cluster's slot map no node gave, the timeouts of a server's maintenance.
 */
const GAVE_UP_NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError', 'CommandTimeoutDuringMaintenanceError', 'SocketTimeoutDuringMaintenanceError']);

/**
 * Whether `error` says that Redis cannot be reached or refuses this connection, as opposed to an
 * answer of Redis (a ReplyError) or a bug: the package's `RedisStreamsConnectionError` (which a
 * Cluster's ACL refusal on the module's connection is), ioredis' errors of a connection down,
 * closed or given up on, and errors carrying a socket's code or a timeout (`connectionErrorCode`;
 * Node's own `ERR_…` codes are not about a connection).
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (error instanceof RedisStreamsConnectionError) return true;
  if (!(error instanceof Error)) return false;
  if (isConnectionDown(error) || NO_CONNECTION_MESSAGES.has(error.message) || GAVE_UP_NAMES.has(error.name)) return true;
  const code = connectionErrorCode(error);
  return code !== undefined && !code.startsWith('ERR_');
}
