import { existsSync } from 'node:fs';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OverviewView } from '../../src/dashboard/dashboard-views.js';
import { OVERVIEW_CONSUMERS, OVERVIEW_GROUPS } from '../../src/dashboard/overview-bounds.js';
import { HANDLED_STREAM, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/**
 * The overview over 1,000 streams: paged by `maxStreams`, every stream reachable, each page's
 * payload bounded whatever Redis holds. With DASHBOARD_TIMING set it also prints how long the API
 * and Chromium's rendering take (docs/dashboard.md quotes them); no test asserts a duration.
 */
const CHROMIUM = '/usr/bin/chromium';
const STREAMS = 1_000;
const names = Array.from({ length: STREAMS }, (_, n) => `scale-${String(n).padStart(4, '0')}`);
const DOM_TIMEOUT = { timeout: 30_000 };

declare const document: { querySelectorAll(selector: string): { length: number } };
declare const performance: {
  now(): number;
  getEntriesByName(name: string): { duration: number; startTime: number; name: string }[];
  getEntriesByType(type: string): { duration: number; startTime: number; name: string; responseEnd?: number }[];
};
type PerformanceResourceTiming = { responseEnd: number; startTime: number };

async function getOverview(app: DashboardApp, query = ''): Promise<{ view: OverviewView; bytes: number }> {
  const response = await fetch(`${app.page}/api/overview${query}`, { signal: AbortSignal.timeout(20_000) });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return { view: JSON.parse(text) as OverviewView, bytes: Buffer.byteLength(text) };
}

describe('dashboard over 1,000 streams (Express and Fastify)', () => {
  const redis = useRedisServer();
  let app: DashboardApp | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const pipeline = redis.client.pipeline();
    for (const name of names) {
      pipeline.xadd(name, '*', 'n', '1');
      pipeline.xgroup('CREATE', name, 'workers', '0');
    }
    await pipeline.exec();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('pages the overview by maxStreams: every one of 1,000 streams reachable once, in order, each page at most maxStreams streams', async () => {
    for (const adapter of ['express', 'fastify'] as const) {
      app = await startDashboardApp(redis.server.url, { streams: names }, adapter);
      const seen: string[] = [];
      let offset: number | null = 0;
      let pages = 0;
      while (offset !== null) {
        const { view } = await getOverview(app, `?offset=${offset}`);
        expect(view.offset).toBe(offset);
        expect(view.total).toBe(STREAMS + 1);
        expect(view.streams.length).toBeLessThanOrEqual(50);
        expect(view.omitted).toBe(view.total - view.streams.length);
        seen.push(...view.streams.map((stream) => stream.name));
        for (const stream of view.streams.filter((one) => one.name !== HANDLED_STREAM)) expect(stream.groups.map((group) => group.name), stream.name).toEqual(['workers']);
        offset = view.next;
        pages++;
      }
      expect(pages).toBe(Math.ceil((STREAMS + 1) / 50));
      expect(seen).toEqual([HANDLED_STREAM, ...names]);
      // A filter on the names, then paged the same way.
      const { view: filtered } = await getOverview(app, '?match=SCALE-09');
      expect(filtered.total).toBe(100);
      expect(filtered.streams.map((stream) => stream.name)).toEqual(names.slice(900, 950));
      expect(filtered.next).toBe(50);
      expect((await fetch(`${app.page}/api/overview?offset=-1`)).status).toBe(400);
      await app.close();
      app = undefined;
    }
  }, 120_000);

  it(`sends at most ${OVERVIEW_GROUPS} groups a stream and ${OVERVIEW_CONSUMERS} consumers a group, counting the rest; totals cover them all`, async () => {
    const wide = 'scale-wide';
    const pipeline = redis.client.pipeline();
    pipeline.xadd(wide, '*', 'n', '1');
    for (let group = 0; group < OVERVIEW_GROUPS + 5; group++) pipeline.xgroup('CREATE', wide, `g${String(group).padStart(2, '0')}`, '0');
    for (let consumer = 0; consumer < OVERVIEW_CONSUMERS + 10; consumer++) pipeline.xgroup('CREATECONSUMER', wide, 'g00', `c${consumer}`);
    await pipeline.exec();
    try {
      for (const adapter of ['express', 'fastify'] as const) {
        app = await startDashboardApp(redis.server.url, { streams: [wide] }, adapter);
        const { view } = await getOverview(app, '?match=wide');
        const [stream] = view.streams;
        expect(stream!.groups).toHaveLength(OVERVIEW_GROUPS);
        expect(stream!.groupsOmitted).toBe(5);
        expect(stream!.groups[0]!.consumers).toHaveLength(OVERVIEW_CONSUMERS);
        expect(stream!.groups[0]!.consumersOmitted).toBe(10);
        expect(stream!.groups[1]!.consumersOmitted).toBeUndefined();
        await app.close();
        app = undefined;
      }
    } finally {
      await redis.client.del(wide);
    }
  }, 60_000);

  it.skipIf(!existsSync(CHROMIUM))('turns the overview pages in Chromium, and filters the streams by name', async () => {
    browser ??= await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--headless=new'], timeout: 30_000 });
    for (const adapter of ['express', 'fastify'] as const) {
      app = await startDashboardApp(redis.server.url, { streams: names, refreshInterval: 500 }, adapter);
      const page = await browser.newPage();
      try {
        await page.goto(app.page, { waitUntil: 'domcontentloaded' });
        await page.waitForSelector(`#streams tr[data-stream="${names[48]}"]`, DOM_TIMEOUT);
        expect(await page.$eval('[data-range="streams"]', (node) => node.textContent)).toBe(`Streams 1–50 of ${STREAMS + 1}.`);
        await page.locator('[data-page="next"]').click();
        await page.waitForSelector(`#streams tr[data-stream="${names[49]}"]`, DOM_TIMEOUT);
        expect(await page.$eval('[data-range="streams"]', (node) => node.textContent)).toBe(`Streams 51–100 of ${STREAMS + 1}.`);
        expect(await page.$(`#streams tr[data-stream="${names[48]}"]`)).toBeNull();
        await page.type('#stream-filter', '0999');
        await page.waitForFunction((name) => document.querySelectorAll('#streams tbody tr').length === 1 && document.querySelectorAll(`#streams tr[data-stream="${name}"]`).length === 1, DOM_TIMEOUT, names[999]!);
      } finally {
        await page.close();
      }
      await app.close();
      app = undefined;
    }
  }, 120_000);

  it.skipIf(process.env.DASHBOARD_TIMING === undefined)('prints how long 1,000 streams take: the API, a page of 50, and the page drawing all 1,000', async () => {
    app = await startDashboardApp(redis.server.url, { streams: names.slice(0, STREAMS - 1), maxStreams: 1_000 });
    const paged = await startDashboardApp(redis.server.url, { streams: names.slice(0, STREAMS - 1) });
    const timed = async (on: DashboardApp) => {
      const started = performance.now();
      const { view, bytes } = await getOverview(on);
      return `${Math.round(performance.now() - started)} ms, ${view.streams.length} streams, ${bytes} bytes`;
    };
    try {
      for (let round = 0; round < 5; round++) console.log(`API: all 1,000 streams: ${await timed(app)}; a page of 50: ${await timed(paged)}`);
    } finally {
      await paged.close();
    }
    browser ??= await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--headless=new'], timeout: 30_000 });
    const page: Page = await browser.newPage();
    await page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => performance.getEntriesByName('dashboard refresh').length >= 6, { timeout: 60_000 });
    const refreshes = await page.evaluate(() => {
      const fetches = performance.getEntriesByType('resource').filter((entry) => entry.name.includes('/api/overview'));
      return performance.getEntriesByName('dashboard refresh').map((entry, index) => ({ refresh: Math.round(entry.duration), fetch: Math.round((fetches[index] as PerformanceResourceTiming).responseEnd - fetches[index]!.startTime) }));
    });
    console.log('Chromium, 1,000 rows: each refresh (fetch + draw) and its overview fetch, ms:', JSON.stringify(refreshes));
    await page.close();
  }, 180_000);
});
