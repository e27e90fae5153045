import type { Writable } from 'node:stream';
import { Redis } from './ioredis.js';
import type { RedisClient } from './connection.js';

/** Sockets corked by `batchThisTick`, uncorked on the next `process.nextTick`. */
const corked = new WeakSet<Writable>();

/**
 * Coalesces the commands written to one connection within a tick into one socket write: call it
 * right before sending a command. The first call of a tick corks the socket; `process.nextTick`
 * uncorks it: after the current callback, and, when the first command came from a promise
 * continuation, after the rest of the microtask queue too (from a plain callback the microtasks
 * it queued may split the batch in two writes; nothing waits longer). Unlike ioredis' auto-pipelining
 * (which waits for `setImmediate` and runs every reply through a pipeline) it adds no event-loop
 * turn to a lone command, and it cannot reorder commands: they stay in the socket's buffer in the
 * order sent. A Cluster client is left alone (it has no single socket; use its auto-pipelining).
 * On this kind of machine a socket write costs tens of µs (loopback delivery included), so
 * writes, not commands, are what a busy producer or worker pays for.
 */
export function batchThisTick(client: RedisClient): void {
  if (!(client instanceof Redis)) return;
  const stream = client.stream as Writable | undefined;
  if (stream === undefined || corked.has(stream) || stream.destroyed || !stream.writable) return;
  stream.cork();
  corked.add(stream);
  process.nextTick(uncork, stream);
}

function uncork(stream: Writable): void {
  corked.delete(stream);
  stream.uncork();
}
