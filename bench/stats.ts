/** Small statistics helpers: medians across runs, percentiles within a run. */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Nearest-rank percentile (p in 0..100) of values already sorted ascending. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Latencies in nanoseconds (a Float64Array filled up to `count`) → milliseconds summary. */
export function summarizeLatencies(latenciesNs: Float64Array, count: number): LatencySummary {
  const sorted = Float64Array.prototype.slice.call(latenciesNs, 0, count).sort();
  return {
    count,
    p50Ms: percentileSorted(sorted as unknown as number[], 50) / 1e6,
    p99Ms: percentileSorted(sorted as unknown as number[], 99) / 1e6,
    maxMs: count > 0 ? (sorted[count - 1] as number) / 1e6 : Number.NaN,
  };
}

/** Growable buffer of latency samples, so a long run does not allocate a number object per message. */
export class LatencyRecorder {
  private samples = new Float64Array(1 << 16);
  private size = 0;

  record(ns: number): void {
    if (this.size === this.samples.length) {
      const bigger = new Float64Array(this.samples.length * 2);
      bigger.set(this.samples);
      this.samples = bigger;
    }
    this.samples[this.size++] = ns;
  }

  /** Summary of everything recorded since the last call, then start afresh. */
  drain(): LatencySummary {
    const summary = summarizeLatencies(this.samples, this.size);
    this.size = 0;
    return summary;
  }
}
