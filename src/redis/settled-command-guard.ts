import type { Command } from 'ioredis';
import { Cluster, type Redis } from './ioredis.js';
import { commandTimeoutRanOut } from './command-timeout.js';

type SendCommand = (command: Command, stream?: unknown, ...rest: unknown[]) => unknown;
/** ioredis' stand-in stream of a pipeline: it writes to the socket once every command of the pipeline was handed to it. */
type PipelineStream = { isPipeline: true; write(chunk: string): void };

/**
 * Keeps a Cluster's node connections from writing a command that already failed its caller.
 *
 * Why: ioredis creates each node connection with `enableOfflineQueue: true`, which no option
 * overrides. A command routed to a node connection that is not ready yet (a master connected to
 * again, one whose handshake is slow) waits in that node's queue, and ioredis writes it once the
 * connection is ready, even when `commandTimeout` failed it meanwhile: an XADD whose emit was
 * reported as failed (and, with IDMP, retried) is then written after all. So a command is dropped
 * when it is handed to a node connection once its commandTimeout ran out (./command-timeout.ts)
 * or its promise settled: failed with "Command timed out" if it is still pending (a Cluster gives
 * a command it re-sends after MOVED a fresh promise), never written. A command inside MULTI/EXEC
 * is written as ioredis would: dropping part of a transaction would break it.
 *
 * Private fields (ioredis 6: `Command#isSettled`, the pipeline's stand-in stream): if a later
 * ioredis changes them, commands are written as before.
 */
export function dropSettledQueuedCommands(client: Redis | Cluster): void {
  if (client instanceof Cluster) client.on('+node', (node: Redis) => guardNode(node));
}

const guarded = new WeakSet<Redis>();

function guardNode(node: Redis): void {
  if (guarded.has(node)) return;
  guarded.add(node);
  const send = (node.sendCommand as SendCommand).bind(node);
  const sendCommand: SendCommand = (command, stream, ...rest) => {
    if (!isOver(command) || command.inTransaction || command.name === 'multi' || command.name === 'exec') return send(command, stream, ...rest);
    if (!command.isSettled) command.reject(new Error('Command timed out'));
    // Counted as handed over (with nothing to write), or the rest of its pipeline would never be written.
    if (isPipelineStream(stream)) stream.write('');
    return command.promise;
  };
  (node as unknown as { sendCommand: SendCommand }).sendCommand = sendCommand;
}

function isOver(command: Command): boolean {
  return command.isSettled || commandTimeoutRanOut(command);
}

function isPipelineStream(stream: unknown): stream is PipelineStream {
  return typeof stream === 'object' && stream !== null && (stream as { isPipeline?: unknown }).isPipeline === true && typeof (stream as { write?: unknown }).write === 'function';
}
