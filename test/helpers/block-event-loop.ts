/**
 * Blocks the calling thread (its timers, its I/O, the lease heartbeat) for `ms`, for ever when
 * omitted, as a CPU-bound handler would, but asleep: a busy loop would take a core from the other
 * spec files running meanwhile. Threads of the process (the lease thread) run on.
 */
export function blockEventLoop(ms = Number.POSITIVE_INFINITY): void {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  // Atomics.wait's timeout is NaN or +Infinity for "no timeout"; nothing ever notifies this cell.
  Atomics.wait(cell, 0, 0, ms);
}
