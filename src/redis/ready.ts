import { RedisStreamsConnectionError } from '../errors.js';
import { watchClusterAclRefusals } from './cluster-acl-refusals.js';
import { connectFailure } from './connect-failure.js';
import type { RedisClient } from './connection.js';

/** Replies that mean "these credentials are wrong": retrying cannot help. */
const AUTH_FAILURE = /^(WRONGPASS|NOAUTH|NOPERM|ERR invalid password|ERR AUTH|ERR Client sent AUTH|ERR invalid username)/;

/**
 * Resolves when `client` is ready (connecting it when it is lazy). Rejects with
 * `RedisStreamsConnectionError` at once when Redis refuses the credentials, a Cluster's ACL user
 * may not learn the slots or the cluster state (naming the rule to add), or the client gives up
 * reconnecting, and after `timeoutMs` otherwise (refused connections and unknown hosts are retried
 * until then: Redis may still be starting). `where` names the connection, without its password.
 * The caller closes the client on failure; nothing here keeps it reconnecting.
 */
export function whenReady(client: RedisClient, timeoutMs: number, where: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    let lastError: Error | undefined;
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      stopWatching();
      client.off('ready', onReady);
      client.off('error', onError);
      client.off('end', onEnd);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReady = (): void => finish();
    const onError = (error: Error): void => {
      lastError = error;
      if (AUTH_FAILURE.test(error.message)) {
        finish(new RedisStreamsConnectionError(`Redis at ${where} refused the credentials: ${error.message}`, { cause: error }));
      }
    };
    // A Cluster's ACL refusal (watched below), else the client ended (`undefined`: its last error says why).
    const fail = (failed: unknown): void => {
      const { reason, cause } = connectFailure(failed, lastError, socketReason);
      finish(new RedisStreamsConnectionError(`cannot connect to Redis at ${where}: ${reason}`, { cause }));
    };
    const onEnd = (): void => fail(undefined);
    const timer = setTimeout(() => {
      const { reason, cause, code } = connectFailure(undefined, lastError, socketReason);
      // Refused until the deadline: ECONNREFUSED; no error at all (Redis accepts, never answers): a timeout.
      finish(new RedisStreamsConnectionError(`cannot connect to Redis at ${where} within ${timeoutMs} ms: ${reason}`, { cause, code: code ?? 'ETIMEDOUT' }));
    }, timeoutMs);
    client.on('ready', onReady);
    client.on('error', onError);
    client.on('end', onEnd);
    const stopWatching = watchClusterAclRefusals(client, fail);
    // A lazy client connects on its first command; start it now. Failures arrive as events.
    if (client.status === 'wait') client.connect().catch(() => undefined);
  });
}

function socketReason(error: unknown): string {
  if (!(error instanceof Error)) return 'no answer';
  const code = (error as { code?: string }).code;
  if (code === 'ECONNREFUSED') return `connection refused (${error.message})`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (${error.message})`;
  return error.message;
}

/**
 * Connects a lazy client (`wait`), or waits for one already on its way (`connecting`, `connect`,
 * `reconnecting`: a `new Cluster(nodes)` starts connecting in its constructor) until it is
 * `ready`. Rejects when it ends first, when connecting a lazy one fails, or with a
 * `ClusterAclRefusalError` (naming the rule to add) when a Cluster's ACL user may not learn the
 * slots or the cluster state. Unbounded: the caller sets the deadline.
 */
export function untilReady(client: RedisClient): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const settle = (error?: Error): void => {
      client.off('ready', onReady);
      client.off('end', onEnd);
      stopWatching();
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReady = (): void => settle();
    const onEnd = (): void => settle(new Error('Connection is closed.'));
    const stopWatching = watchClusterAclRefusals(client, settle);
    if (client.status === 'wait') {
      // A Cluster whose ready check is refused never settles connect(): the watch ends the wait.
      client.connect().then(() => settle(), settle);
      return;
    }
    client.once('ready', onReady);
    client.once('end', onEnd);
  });
}
