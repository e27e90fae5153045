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
