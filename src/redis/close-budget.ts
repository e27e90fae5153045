/** How long closing waits, in all, on a Redis that does not answer: one QUIT timeout. */
export const CLOSE_BUDGET_MS = 2_000;

/**
 * The time one `close()` may spend waiting on Redis, shared by its steps in order: each step gets
 * what the earlier ones left. With Redis answering, a step takes milliseconds and the next still
 * gets nearly all of it (QUITs stay in order, each after its connection's queued commands); with
 * Redis not answering (paused, partitioned), the first step spends it and the later ones give up
 * at once, so close() waits once instead of once per step. Nothing is lost by giving up: an entry
 * not acked stays pending and is delivered again.
 */
export class CloseBudget {
  private spentMs = 0;

  constructor(private readonly totalMs = CLOSE_BUDGET_MS) {}

  /** What is left for the next step, in ms (0: do not wait on Redis any more). */
  get remainingMs(): number {
    return Math.max(0, this.totalMs - this.spentMs);
  }

  /**
   * Runs `step` with what is left and charges the time it took. One step at a time: work that
   * runs in parallel goes in one step, charged once.
   */
  async spend<T>(step: (remainingMs: number) => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await step(this.remainingMs);
    } finally {
      this.spentMs += performance.now() - started;
    }
  }
}
