import { expect } from 'vitest';
import type { SeriesView } from '../../src/dashboard/stream-history.js';
import type { DashboardApp } from './dashboard-app.js';
import { waitFor } from './wait.js';

/** The charts' samples of `stream` as the page reads them (GET api/series), or null where the route has none (404). */
export async function seriesOf(app: DashboardApp, stream: string): Promise<SeriesView | null> {
  const response = await fetch(`${app.page}/api/series?stream=${encodeURIComponent(stream)}`, { signal: AbortSignal.timeout(5_000) });
  if (response.status === 404) return null;
  expect(response.status).toBe(200);
  return (await response.json()) as SeriesView;
}

/** Waits for `count` more samples of `stream` than `after` (counted by the sample times the route sends). */
export async function samplesAfter(app: DashboardApp, stream: string, after: number, count = 1): Promise<SeriesView> {
  let last: SeriesView | null = null;
  await waitFor(async () => {
    last = await seriesOf(app, stream);
    return last !== null && last.at.length >= after + count;
  }, `${after + count} samples`, { timeout: 20_000 });
  return last!;
}
