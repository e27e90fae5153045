import { aclRefusal } from './acl-refusal.js';
import type { Cluster } from './ioredis.js';
import { isClusterClient } from './cluster-client.js';
import type { RedisClient } from './connection.js';

/** A node of a Cluster refused, by the ACL, a command ioredis needs to connect; the message names the rule to add. */
export class ClusterAclRefusalError extends Error {
  override readonly name = 'ClusterAclRefusalError';
}

type ReadyCheck = (callback: (error: Error | null | undefined, state?: string) => void) => void;

/**
 * While a Cluster connects, calls `onRefused` with an error naming the ACL rule its user lacks
 * (its cause the NOPERM reply) when a node refuses CLUSTER SLOTS (the slot map) or CLUSTER INFO (the ready check) with NOPERM;
 * returns the function that stops watching. A plain Redis client is not watched (a refused
 * handshake is an error event of its own).
 *
 * Why: ioredis takes both refusals for a node it could not reach and retries until the caller's
 * deadline. A refused CLUSTER SLOTS surfaces only as the `lastNodeError` of "Failed to refresh
 * slots cache."; a refused CLUSTER INFO not at all (its ready check just reconnects), so its
 * `readyCheck` (ioredis 6 internals, not public API) is wrapped on this instance while watching.
 * If a later ioredis renames it, that refusal is reported at the deadline as before.
 */
export function watchClusterAclRefusals(client: RedisClient, onRefused: (refusal: ClusterAclRefusalError) => void): () => void {
  if (!isClusterClient(client)) return () => undefined;
  const cluster = client;
  const user = cluster.options.redisOptions?.username;
  const report = (error: unknown, command: readonly string[]): void => {
    const refusal = aclRefusal(error, command, user);
    if (refusal !== undefined) onRefused(new ClusterAclRefusalError(refusal, { cause: error }));
  };
  // ioredis' ClusterAllFailedError: every node failed CLUSTER SLOTS, the last one's reply kept.
  const onError = (error: Error & { lastNodeError?: unknown }): void => report(error.lastNodeError, ['cluster', 'slots']);
  cluster.on('error', onError);
  const unwrap = wrapReadyCheck(cluster, (error) => report(error, ['cluster', 'info']));
  return () => {
    cluster.off('error', onError);
    unwrap();
  };
}

function wrapReadyCheck(cluster: Cluster, onError: (error: Error) => void): () => void {
  const holder = cluster as unknown as { readyCheck?: unknown };
  const original = holder.readyCheck;
  if (typeof original !== 'function') return () => undefined;
  const own = Object.prototype.hasOwnProperty.call(holder, 'readyCheck');
  const wrapped: ReadyCheck = (callback) =>
    (original as ReadyCheck).call(cluster, (error, state) => {
      if (error) onError(error);
      callback(error, state);
    });
  holder.readyCheck = wrapped;
  return () => {
    // Another wrapper installed after this one stays (and still calls this one, harmlessly).
    if (holder.readyCheck !== wrapped) return;
    if (own) holder.readyCheck = original;
    else delete holder.readyCheck;
  };
}
