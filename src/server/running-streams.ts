/** A streamed reply close() can give up on (streamed-reply.ts). */
export interface AbandonableStream {
  /** Unsubscribed, nothing more is written, the entry stays pending; a write in flight ends first (the promise). */
  abandon(): Promise<void> | undefined;
}

/**
 * The streamed replies still running. `close()` waits `shutdownTimeout` for them as for any
 * handler; then it unsubscribes those left (a never-completing Observable would else run on, and
 * try to reply on closed connections at its next value) and their requests stay pending.
 */
export class RunningStreams {
  private readonly running = new Set<AbandonableStream>();

  add(stream: AbandonableStream): void {
    this.running.add(stream);
  }

  delete(stream: AbandonableStream): void {
    this.running.delete(stream);
  }

  get size(): number {
    return this.running.size;
  }

  /** Abandons every running stream; resolves once the reply writes in flight ended (no write starts after). */
  async abandonAll(): Promise<void> {
    const writing: Promise<void>[] = [];
    for (const stream of this.running) {
      const stopped = stream.abandon();
      if (stopped !== undefined) writing.push(stopped);
    }
    this.running.clear();
    await Promise.all(writing);
  }
}
