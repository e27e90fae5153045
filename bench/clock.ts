/**
 * One clock for every process of a run: `process.hrtime.bigint()` reads CLOCK_MONOTONIC on Linux,
 * which all processes of the machine share, so a stamp taken by the producer can be compared with
 * the time the handler ran in the worker process.
 */
export function nowNs(): number {
  // A double holds nanoseconds exactly up to ~104 days of uptime; enough for a latency.
  return Number(process.hrtime.bigint());
}

export function nsToMs(ns: number): number {
  return ns / 1e6;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Unix time (ms, CLOCK_REALTIME: what Redis' TIME reads on this machine) minus the shared
 * monotonic clock (ms), to a few µs: taken at the instant `Date.now()` ticks over, since a
 * reading between ticks is up to 1 ms off. Converts a Unix due time (`deliverAt`, judged by
 * Redis on its TIME) to a monotonic reading a worker can compare with its own `nowNs()`.
 */
export function realtimeOffsetMs(): number {
  const start = Date.now();
  let now = start;
  let mono = 0;
  while (now === start) {
    mono = nowNs();
    now = Date.now();
  }
  // `mono` was read just before the tick: the error is one loop iteration (< 1 µs), not 1 ms.
  return now - mono / 1e6;
}
