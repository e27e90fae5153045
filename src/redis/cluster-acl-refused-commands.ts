import type { Command } from 'ioredis';
import { watchClusterAclRefusals, type ClusterAclRefusalError } from './cluster-acl-refusals.js';
import { isClusterClient } from './cluster-client.js';
import type { Cluster } from './ioredis.js';
import type { RedisClient } from './connection.js';

type SendCommand = (command: Command, stream?: unknown, ...rest: unknown[]) => unknown;
type ExecCallback = (error: Error | null, result?: unknown) => void;
type Exec = (callback?: ExecCallback) => Promise<unknown>;
/** ioredis' Pipeline, as `pipeline()` and `multi()` return it (MULTI ... EXEC is a pipeline too). */
type Batch = { exec: Exec };
type BatchFactory = (...args: unknown[]) => unknown;
type DelayUntilReady = (callback: (error?: Error) => void) => void;
/** A batch whose `exec` waits for the Cluster: sent once it is ready, failed with the refusal. */
type WaitingBatch = { send(): void; refuse(refusal: ClusterAclRefusalError): void };

/**
 * For a Cluster connection that nothing waits on to be ready (the module's shared connection):
 * once a node refuses, by the ACL, a command ioredis needs to connect (./cluster-acl-refusals.ts),
 * the commands waiting for the Cluster to be ready, and those sent while it is still not ready,
 * fail with `failure(refusal)` (naming the rule to add; a fresh error each) instead of waiting in
 * its offline queue for good. ioredis goes on reconnecting: once the rule is added and the Cluster
 * is ready, commands run again. Returns the function that stops this.
 *
 * Pipelines and MULTI (`pipeline()` and `multi()`, wrapped on this instance; `enableAutoPipelining`
 * makes its pipelines with them) are decided as a whole at `exec`, before any of their commands
 * enters ioredis' queue: while the Cluster is not ready, `exec` waits for it (then runs as ioredis
 * would), for the refusal (then the batch fails, none of it written) or for a connect attempt that
 * fails otherwise (then it is ioredis' again, as without this). Failing commands of a batch one by
 * one would not do: a refused part keeps the rest from being written, and a transaction told it
 * failed would run later (./settled-command-guard.ts writes MULTI/EXEC whole). An autopipelined
 * command sent before the Cluster has its slot map waits in ioredis for the connect attempt
 * (`delayUntilReady`, an ioredis 6 internal, also wrapped here): that attempt's error is replaced by
 * the refusal it met.
 *
 * ioredis' deprecated `execBuffer()` needs nothing of its own: a MULTI's calls the instance's
 * `exec` (the wrapped one) after queueing EXEC, and a plain pipeline's only queues an EXEC command
 * and returns the pipeline, sending nothing (its `exec()` then sends, decided as above).
 */
export function failCommandsOnClusterAclRefusal(client: RedisClient, failure: (refusal: ClusterAclRefusalError) => Error): () => void {
  if (!isClusterClient(client)) return () => undefined;
  const cluster = client;
  let refused: ClusterAclRefusalError | undefined;
  let stopped = false;
  const waiting = new Set<Command>();
  const waitingBatches = new Set<WaitingBatch>();
  const send = (cluster.sendCommand as SendCommand).bind(cluster);
  const sendCommand: SendCommand = (command, stream, ...rest) => {
    if (stopped || stream !== undefined || !waitsForReady(cluster, command)) return send(command, stream, ...rest);
    if (refused !== undefined) {
      command.reject(failure(refused));
      return command.promise;
    }
    waiting.add(command);
    const done = (): boolean => waiting.delete(command);
    command.promise.then(done, done);
    return send(command, stream, ...rest);
  };
  (cluster as unknown as { sendCommand: SendCommand }).sendCommand = sendCommand;

  /** `exec` of `batch`, decided at its first call (later calls are ioredis' own retries). */
  const decideAtExec = (batch: Batch): void => {
    const exec = batch.exec;
    let first = true;
    batch.exec = (callback) => {
      if (!first || stopped || cluster.status === 'ready') {
        first = false;
        return exec.call(batch, callback);
      }
      first = false;
      if (cluster.status === 'wait') cluster.connect().catch(() => undefined);
      const outcome = new Promise<unknown>((resolve, reject) => {
        if (refused !== undefined) return reject(failure(refused));
        const waitingBatch: WaitingBatch = {
          send: () => {
            waitingBatches.delete(waitingBatch);
            resolve(exec.call(batch));
          },
          refuse: (refusal) => {
            waitingBatches.delete(waitingBatch);
            reject(failure(refusal));
          },
        };
        waitingBatches.add(waitingBatch);
      });
      if (callback !== undefined) outcome.then((result) => callback(null, result), (error: Error) => callback(error));
      return outcome;
    };
  };
  for (const name of ['pipeline', 'multi'] as const) {
    const create = (cluster[name] as unknown as BatchFactory).bind(cluster);
    (cluster as unknown as Record<string, BatchFactory>)[name] = (...args) => {
      const batch = create(...args);
      // multi({ pipeline: false }) sends a bare MULTI (a command, handled above): no batch to wrap.
      if (typeof (batch as Partial<Batch> | null)?.exec === 'function' && !(batch instanceof Promise)) decideAtExec(batch as Batch);
      return batch;
    };
  }
  const unwrapDelayUntilReady = replaceConnectErrorByRefusal(cluster, () => (refused === undefined || stopped ? undefined : failure(refused)));

  // Batches that wait go on as ioredis would once the Cluster is ready, or when an attempt fails for
  // a reason other than the ACL (ioredis then fails or queues them as without this).
  const sendWaitingBatches = (): void => {
    for (const batch of waitingBatches) batch.send();
  };
  const onReady = (): void => {
    refused = undefined;
    sendWaitingBatches();
  };
  cluster.on('ready', onReady);
  cluster.on('close', sendWaitingBatches);
  const stopWatching = watchClusterAclRefusals(cluster, (refusal) => {
    refused = refusal;
    // Rejected where they wait: ioredis writes none of them later (./settled-command-guard.ts).
    // A fresh error each: a caller that adds to its error changes no one else's.
    for (const command of waiting) command.reject(failure(refusal));
    waiting.clear();
    for (const batch of waitingBatches) batch.refuse(refusal);
  });
  return () => {
    // The wrappers stay (another may have wrapped them since), passing everything on.
    stopped = true;
    refused = undefined;
    stopWatching();
    unwrapDelayUntilReady();
    cluster.off('ready', onReady);
    cluster.off('close', sendWaitingBatches);
    sendWaitingBatches();
  };
}

/** Whether ioredis holds `command` in the Cluster's offline queue until it is ready: CLUSTER (its ready check's CLUSTER INFO) goes out while connecting. */
function waitsForReady(client: RedisClient, command: Command): boolean {
  return client.status !== 'ready' && command.name !== 'cluster';
}

/**
 * Makes the error a batch gets from ioredis' `delayUntilReady` (a pipeline or an autopipelined
 * command waiting for the slot map: "None of startup nodes is available") the one `refusalError()`
 * returns, when it returns one. If a later ioredis renames it, such batches fail as before.
 */
function replaceConnectErrorByRefusal(cluster: Cluster, refusalError: () => Error | undefined): () => void {
  const holder = cluster as unknown as { delayUntilReady?: unknown };
  const original = holder.delayUntilReady;
  if (typeof original !== 'function') return () => undefined;
  const own = Object.prototype.hasOwnProperty.call(holder, 'delayUntilReady');
  const wrapped: DelayUntilReady = (callback) => (original as DelayUntilReady).call(cluster, (error) => callback(error === undefined || error === null ? error : (refusalError() ?? error)));
  holder.delayUntilReady = wrapped;
  return () => {
    if (holder.delayUntilReady !== wrapped) return;
    if (own) holder.delayUntilReady = original;
    else delete holder.delayUntilReady;
  };
}
