/** Numbers for people: durations and rates as a terminal shows them. */

/**
 * 850 → `850ms`, 12_300 → `12.3s`, 245_000 → `4m05s`, 7_380_000 → `2h03m`, 273_600_000 → `3d04h`.
 * Every unit is cut, not rounded, as a clock shows time: rounded, 59_960 would show as `60.0s`.
 */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || ms < 0) return '-';
  if (ms < 1_000) return `${Math.floor(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const pair = (big: number, small: number, bigUnit: string, smallUnit: string) => `${big}${bigUnit}${String(small).padStart(2, '0')}${smallUnit}`;
  const seconds = Math.floor(ms / 1_000);
  if (seconds < 3_600) return pair(Math.floor(seconds / 60), seconds % 60, 'm', 's');
  const minutes = Math.floor(seconds / 60);
  if (minutes < 1_440) return pair(Math.floor(minutes / 60), minutes % 60, 'h', 'm');
  const hours = Math.floor(minutes / 60);
  return pair(Math.floor(hours / 24), hours % 24, 'd', 'h');
}

/** Per-second rate with one decimal; `-` when unknown. */
export function formatRate(perSecond: number | null | undefined): string {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return '-';
  return perSecond.toFixed(1);
}

/** Epoch milliseconds → ISO-8601 time (UTC), for dead-letter timestamps. */
export function formatInstant(epochMs: number): string {
  return Number.isFinite(epochMs) ? new Date(epochMs).toISOString() : '-';
}
