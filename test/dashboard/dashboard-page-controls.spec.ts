import { existsSync, mkdirSync } from 'node:fs';
import puppeteer, { type Browser, type HTTPRequest, type Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HANDLED_STREAM, seedStream, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** Dark mode, the refresh control and keyboard use, in Chromium on Express and Fastify. */
const CHROMIUM = '/usr/bin/chromium';
const DOM_TIMEOUT = { timeout: 15_000 };
const ADAPTERS = ['express', 'fastify'] as const;

interface PageNode {
  id: string;
  tagName: string;
  textContent: string | null;
  dataset: Record<string, string | undefined>;
}
declare const document: { activeElement: PageNode | null; body: PageNode; querySelector(selector: string): PageNode | null };
declare const sessionStorage: { clear(): void };
declare function getComputedStyle(node: PageNode): { backgroundColor: string; outlineStyle: string };

describe.skipIf(!existsSync(CHROMIUM))('dashboard page controls in Chromium (Express and Fastify)', () => {
  const redis = useRedisServer();
  let browser: Browser | undefined;
  let app: DashboardApp | undefined;
  let page: Page;
  /** Times (ms) of the page's overview requests. */
  let overviewRequests: number[];

  beforeAll(async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--headless=new'], timeout: 30_000 });
  }, 40_000);
  afterAll(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    overviewRequests = [];
    page = await browser!.newPage();
    page.setDefaultTimeout(15_000);
    await page.setViewport({ width: 1100, height: 760 });
    page.on('request', (request: HTTPRequest) => {
      if (request.url().includes('/api/overview')) overviewRequests.push(Date.now());
    });
    await seedStream(redis.client, HANDLED_STREAM, { entries: 9, pending: 3, deadLetters: 1 });
  });
  afterEach(async () => {
    await page.close();
    await app?.close();
    app = undefined;
    await redis.client.flushall();
  });

  async function open(adapter: (typeof ADAPTERS)[number], refreshInterval = 500): Promise<void> {
    app = await startDashboardApp(redis.server.url, { refreshInterval, sampleInterval: 500 }, adapter);
    await page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector(`#streams tr[data-stream="${HANDLED_STREAM}"]`, DOM_TIMEOUT);
  }

  const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

  it('follows the system: dark colours when it prefers dark, light ones otherwise', async () => {
    for (const adapter of ADAPTERS) {
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
      await open(adapter);
      expect(await background()).toBe('rgb(246, 247, 249)');
      await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      expect(await background()).toBe('rgb(13, 17, 23)');
      expect(await page.evaluate(() => getComputedStyle(document.querySelector('section')!).backgroundColor)).toBe('rgb(22, 27, 34)');
      if (process.env.DASHBOARD_SCREENSHOT !== undefined && adapter === 'express') {
        await page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
        await page.waitForSelector('[data-view="charts"] [data-series="pending"]', DOM_TIMEOUT);
        mkdirSync('docs/images', { recursive: true });
        await page.screenshot({ path: 'docs/images/dashboard-dark.png' });
      }
      await app!.close();
      app = undefined;
    }
  }, 60_000);

  it('pauses and resumes the refreshes, refreshes at the interval chosen, and keeps both in the tab across a reload', async () => {
    for (const adapter of ADAPTERS) {
      overviewRequests = [];
      await open(adapter);
      await waitFor(() => overviewRequests.length >= 3, 'refreshes every 500 ms');
      await page.locator('#refresh-toggle').click();
      expect(await page.$eval('#refresh-toggle', (node) => [node.textContent, node.getAttribute('aria-pressed')])).toEqual(['Resume', 'true']);
      // A refresh already under way may still finish; none starts after it.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const paused = overviewRequests.length;
      // Opening a stream still reads it once, and then the page stays still.
      await page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
      await waitFor(() => overviewRequests.length === paused + 1, 'the one refresh of the navigation');
      await page.waitForSelector('#detail:not([hidden])', DOM_TIMEOUT);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(overviewRequests.length).toBe(paused + 1);
      await page.locator('#refresh-toggle').click();
      await waitFor(() => overviewRequests.length >= paused + 2, 'refreshes again after Resume');

      // Every 2 s: two refreshes at least 1.9 s apart.
      await page.select('#refresh-interval', '2000');
      const from = overviewRequests.length;
      await waitFor(() => overviewRequests.length >= from + 3, 'refreshes every 2 s', { timeout: 15_000 });
      const gaps = overviewRequests.slice(from + 1).map((at, index) => at - overviewRequests[from + index]!);
      expect(Math.min(...gaps.slice(1))).toBeGreaterThanOrEqual(1_900);

      // Kept in the tab: paused at 2 s after a reload.
      await page.locator('#refresh-toggle').click();
      await page.reload({ waitUntil: 'domcontentloaded' });
      await page.waitForSelector('#refresh-toggle[aria-pressed="true"]', DOM_TIMEOUT);
      expect(await page.$eval('#refresh-interval', (node) => (node as unknown as { value: string }).value)).toBe('2000');
      await page.evaluate(() => sessionStorage.clear());
      await app!.close();
      app = undefined;
    }
  }, 90_000);

  it('is usable from the keyboard: / focuses the filter, Tab and Enter open a stream, Esc closes it, focus always visible', async () => {
    for (const adapter of ADAPTERS) {
      await open(adapter);
      await page.keyboard.press('/');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('stream-filter');
      await page.keyboard.type('orders');
      await page.keyboard.press('Escape');
      expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('BODY');
      // Tab from the filter reaches the stream's button; Enter opens its details.
      await page.focus('#stream-filter');
      let focused = '';
      for (let tab = 0; tab < 12 && focused !== HANDLED_STREAM; tab++) {
        await page.keyboard.press('Tab');
        focused = await page.evaluate(() => (document.activeElement?.tagName === 'BUTTON' ? document.activeElement.textContent ?? '' : ''));
      }
      expect(focused).toBe(HANDLED_STREAM);
      expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
      // The refreshes redraw the table: the focus stays on the stream's button.
      const seen = overviewRequests.length;
      await waitFor(() => overviewRequests.length >= seen + 2, 'two refreshes');
      await page.waitForFunction((seenAt) => Number(document.body.dataset.refreshedAt) > seenAt, DOM_TIMEOUT, Date.now());
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#detail:not([hidden]) h2', DOM_TIMEOUT);
      // Its actions are buttons: reached with Tab, focus visible.
      await page.focus('#detail button');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.tagName)).toMatch(/^(BUTTON|INPUT|SELECT)$/);
      expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
      // A pending entry opened with Enter: Esc closes it first, then the details.
      await page.focus('#detail tr[data-id] button');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#entry:not([hidden])', DOM_TIMEOUT);
      await page.keyboard.press('Escape');
      await page.waitForSelector('#entry[hidden]', DOM_TIMEOUT);
      expect(await page.$eval('#detail', (node) => (node as unknown as { hidden: boolean }).hidden)).toBe(false);
      await page.keyboard.press('Escape');
      await page.waitForSelector('#detail[hidden]', DOM_TIMEOUT);
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
      await app!.close();
      app = undefined;
    }
  }, 90_000);
});
