import type { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type { RedisClient } from './connection.js';

/**
 * Coalesces the commands written to one connection within a tick into one socket write: the
 * first command of a tick corks the socket, `process.nextTick` uncorks it once the current
 * callbacks and their microtasks ran. Unlike ioredis' auto-pipelining (which waits for
 * `setImmediate` and runs every reply through a pipeline) it adds no event-loop turn to a lone
 * command, and it cannot reorder commands: they stay in the socket's buffer in the order sent.
 * A Cluster client is left alone (it has no single socket; use its auto-pipelining).
 */
export class TickBatching {
  private corked: Writable | undefined;

  constructor(private readonly client: RedisClient) {}

  /** Call right before sending a command. */
  hold(): void {
    if (this.corked !== undefined || !(this.client instanceof Redis)) return;
    const stream = this.client.stream as Writable | undefined;
    if (stream === undefined || stream.destroyed || !stream.writable) return;
    stream.cork();
    this.corked = stream;
    process.nextTick(this.release);
  }

  private readonly release = (): void => {
    const stream = this.corked;
    this.corked = undefined;
    stream?.uncork();
  };
}
