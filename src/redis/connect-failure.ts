import { errorMessage } from '../error-message.js';
import { connectionErrorCode } from '../errors.js';
import { ClusterAclRefusalError } from './cluster-acl-refusals.js';

/** Why connecting failed, for the caller's own sentence ("cannot connect to …: <reason>"). */
export interface ConnectFailure {
  /** A Cluster's ACL refusal (naming the rule to add), else the connection's error as `describe` words it. */
  readonly reason: string;
  /** The refusal's NOPERM reply, else the connection's last error, else what failed. */
  readonly cause: unknown;
  /** The socket's code (ECONNREFUSED…, ETIMEDOUT for a command timeout); none for an ACL refusal. */
  readonly code: string | undefined;
}

/**
 * The one reading of a failed connect: `failed` is what the wait for ready failed with (a
 * `ClusterAclRefusalError` from ./ready.ts, ioredis' "Connection is closed.", a timeout, or
 * nothing), `lastError` the connection's last 'error' event, which says more than ioredis'
 * rejection (the socket's ECONNREFUSED, "Failed to refresh slots cache."). A refusal wins over
 * both: the NOPERM reply is the reason, whatever ioredis reported around it.
 */
export function connectFailure(failed: unknown, lastError: Error | undefined, describe: (error: unknown) => string = errorMessage): ConnectFailure {
  if (failed instanceof ClusterAclRefusalError) return { reason: failed.message, cause: failed.cause, code: undefined };
  const cause = lastError ?? failed;
  return { reason: describe(cause), cause, code: connectionErrorCode(lastError) ?? connectionErrorCode(failed) };
}
