import type { Command } from 'ioredis';
import { watchClusterAclRefusals, type ClusterAclRefusalError } from './cluster-acl-refusals.js';
import { isClusterClient } from './cluster-client.js';
import type { RedisClient } from './connection.js';

type SendCommand = (command: Command, stream?: unknown, ...rest: unknown[]) => unknown;

/**
 * For a Cluster connection that nothing waits on to be ready (the module's shared connection):
 * once a node refuses, by the ACL, a command ioredis needs to connect (./cluster-acl-refusals.ts),
 * the commands waiting for the Cluster to be ready, and those sent while it is still not ready,
 * fail with `failure(refusal)` (naming the rule to add) instead of waiting in its offline queue
 * for good. ioredis goes on reconnecting: once the rule is added and the Cluster is ready,
 * commands run again. Returns the function that stops this.
 *
 * A command of a pipeline (handed over with its stand-in stream) is left to ioredis: failing part
 * of a pipeline would keep the rest from being written (a pipeline waits for the slots, and fails
 * with the connect attempt that cannot learn them).
 */
export function failCommandsOnClusterAclRefusal(client: RedisClient, failure: (refusal: ClusterAclRefusalError) => Error): () => void {
  if (!isClusterClient(client)) return () => undefined;
  let refused: ClusterAclRefusalError | undefined;
  let stopped = false;
  const waiting = new Set<Command>();
  const send = (client.sendCommand as SendCommand).bind(client);
  const sendCommand: SendCommand = (command, stream, ...rest) => {
    if (stopped || stream !== undefined || !waitsForReady(client, command)) return send(command, stream, ...rest);
    if (refused !== undefined) {
      command.reject(failure(refused));
      return command.promise;
    }
    waiting.add(command);
    const done = (): boolean => waiting.delete(command);
    command.promise.then(done, done);
    return send(command, stream, ...rest);
  };
  (client as unknown as { sendCommand: SendCommand }).sendCommand = sendCommand;
  const onReady = (): void => {
    refused = undefined;
  };
  client.on('ready', onReady);
  const stopWatching = watchClusterAclRefusals(client, (refusal) => {
    refused = refusal;
    // Rejected where they wait: ioredis writes none of them later (./settled-command-guard.ts).
    // A fresh error each: a caller that adds to its error changes no one else's.
    for (const command of waiting) command.reject(failure(refusal));
    waiting.clear();
  });
  return () => {
    // The wrapper stays (another may have wrapped it since), passing everything on.
    stopped = true;
    refused = undefined;
    stopWatching();
    client.off('ready', onReady);
  };
}

/** Whether ioredis holds `command` in the Cluster's offline queue until it is ready: CLUSTER (its ready check's CLUSTER INFO) goes out while connecting. */
function waitsForReady(client: RedisClient, command: Command): boolean {
  return client.status !== 'ready' && command.name !== 'cluster';
}
