import { mkdirSync } from 'node:fs';
import type { HTTPRequest } from 'puppeteer-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { HANDLED_STREAM, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

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

/** Dark mode, the refresh control and keyboard use, in Chromium on Express and Fastify. */
describe.skipIf(!HAS_CHROMIUM)('dashboard page controls in Chromium (Express and Fastify)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);
  /** Times (ms) of the page's overview requests. */
  let overviewRequests: number[];

  const browser = useDashboardBrowser({ viewport: { width: 1100, height: 760 } });

  beforeEach(async () => {
    overviewRequests = [];
    browser.page.on('request', (request: HTTPRequest) => {
      if (request.url().includes('/api/overview')) overviewRequests.push(Date.now());
    });
    await seedStream(redis.client, HANDLED_STREAM, { entries: 9, pending: 3, deadLetters: 1 });
  });

  async function open(adapter: (typeof ADAPTERS)[number], refreshInterval = 500): Promise<void> {
    const app = await dashboard.start({ refreshInterval, sampleInterval: 500 }, adapter);
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await browser.page.waitForSelector(`#streams tr[data-stream="${HANDLED_STREAM}"]`, DOM_TIMEOUT);
  }

  const background = () => browser.page.evaluate(() => getComputedStyle(document.body).backgroundColor);

  it('follows the system: dark colours when it prefers dark, light ones otherwise', async () => {
    for (const adapter of ADAPTERS) {
      await browser.page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
      await open(adapter);
      expect(await background()).toBe('rgb(246, 247, 249)');
      await browser.page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
      expect(await background()).toBe('rgb(13, 17, 23)');
      expect(await browser.page.evaluate(() => getComputedStyle(document.querySelector('section')!).backgroundColor)).toBe('rgb(22, 27, 34)');
      if (process.env.DASHBOARD_SCREENSHOT !== undefined && adapter === 'express') {
        await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
        await browser.page.waitForSelector('[data-view="charts"] [data-series="pending"]', DOM_TIMEOUT);
        mkdirSync('docs/images', { recursive: true });
        await browser.page.screenshot({ path: 'docs/images/dashboard-dark.png' });
      }
      await dashboard.close();
    }
  }, 60_000);

  it('pauses and resumes the refreshes, refreshes at the interval chosen, and keeps both in the tab across a reload', async () => {
    for (const adapter of ADAPTERS) {
      overviewRequests = [];
      await open(adapter);
      await waitFor(() => overviewRequests.length >= 3, 'refreshes every 500 ms');
      await browser.page.locator('#refresh-toggle').click();
      expect(await browser.page.$eval('#refresh-toggle', (node) => [node.textContent, node.getAttribute('aria-pressed')])).toEqual(['Resume', 'true']);
      // A refresh already under way may still finish; none starts after it.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const paused = overviewRequests.length;
      // Opening a stream still reads it once, and then the page stays still.
      await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
      await waitFor(() => overviewRequests.length === paused + 1, 'the one refresh of the navigation');
      await browser.page.waitForSelector('#detail:not([hidden])', DOM_TIMEOUT);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(overviewRequests.length).toBe(paused + 1);
      await browser.page.locator('#refresh-toggle').click();
      await waitFor(() => overviewRequests.length >= paused + 2, 'refreshes again after Resume');

      // Every 1 s (the shortest choice above the app's 500 ms): two refreshes at least 0.95 s apart.
      await browser.page.select('#refresh-interval', '1000');
      const from = overviewRequests.length;
      await waitFor(() => overviewRequests.length >= from + 3, 'refreshes every 1 s', { timeout: 15_000 });
      const gaps = overviewRequests.slice(from + 1).map((at, index) => at - overviewRequests[from + index]!);
      expect(Math.min(...gaps.slice(1))).toBeGreaterThanOrEqual(950);

      // Kept in the tab: paused at 1 s after a reload.
      await browser.page.locator('#refresh-toggle').click();
      await browser.page.reload({ waitUntil: 'domcontentloaded' });
      await browser.page.waitForSelector('#refresh-toggle[aria-pressed="true"]', DOM_TIMEOUT);
      expect(await browser.page.$eval('#refresh-interval', (node) => (node as unknown as { value: string }).value)).toBe('1000');
      await browser.page.evaluate(() => sessionStorage.clear());
      await dashboard.close();
    }
  }, 90_000);

  it('keeps the focus through a refresh without scrolling to it: scrolled down to the find form, the page stays where it is', async () => {
    await open('express');
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    await browser.page.waitForSelector('#find-form', DOM_TIMEOUT);
    expect(await browser.page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
    const scrolled = (await browser.page.evaluate('window.scrollTo(0, document.body.scrollHeight), window.scrollY')) as number;
    expect(scrolled).toBeGreaterThan(200);
    // The refreshes redraw the overview: the focus goes to the stream's new button, the view stays.
    const seen = overviewRequests.length;
    await waitFor(() => overviewRequests.length >= seen + 2, 'two refreshes');
    await browser.page.waitForFunction((seenAt) => Number(document.body.dataset.refreshedAt) > seenAt, DOM_TIMEOUT, Date.now());
    expect(await browser.page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
    expect(await browser.page.evaluate('window.scrollY')).toBe(scrolled);
  }, 60_000);

  it('is usable from the keyboard: / focuses the filter, Tab and Enter open a stream, Esc closes it, focus always visible', async () => {
    for (const adapter of ADAPTERS) {
      await open(adapter);
      await browser.page.keyboard.press('/');
      expect(await browser.page.evaluate(() => document.activeElement?.id)).toBe('stream-filter');
      await browser.page.keyboard.type('orders');
      await browser.page.keyboard.press('Escape');
      expect(await browser.page.evaluate(() => document.activeElement?.tagName)).toBe('BODY');
      // Tab from the filter reaches the stream's button; Enter opens its details.
      await browser.page.focus('#stream-filter');
      let focused = '';
      for (let tab = 0; tab < 12 && focused !== HANDLED_STREAM; tab++) {
        await browser.page.keyboard.press('Tab');
        focused = await browser.page.evaluate(() => (document.activeElement?.tagName === 'BUTTON' ? document.activeElement.textContent ?? '' : ''));
      }
      expect(focused).toBe(HANDLED_STREAM);
      expect(await browser.page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
      // The refreshes redraw the table: the focus stays on the stream's button.
      const seen = overviewRequests.length;
      await waitFor(() => overviewRequests.length >= seen + 2, 'two refreshes');
      await browser.page.waitForFunction((seenAt) => Number(document.body.dataset.refreshedAt) > seenAt, DOM_TIMEOUT, Date.now());
      expect(await browser.page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
      await browser.page.keyboard.press('Enter');
      await browser.page.waitForSelector('#detail:not([hidden]) h2', DOM_TIMEOUT);
      // Its actions are buttons: reached with Tab, focus visible.
      await browser.page.focus('#detail button');
      await browser.page.keyboard.press('Tab');
      expect(await browser.page.evaluate(() => document.activeElement?.tagName)).toMatch(/^(BUTTON|INPUT|SELECT)$/);
      expect(await browser.page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
      // A pending entry opened with Enter: Esc closes it first, then the details.
      await browser.page.focus('#detail tr[data-id] button');
      await browser.page.keyboard.press('Enter');
      await browser.page.waitForSelector('#entry:not([hidden])', DOM_TIMEOUT);
      await browser.page.keyboard.press('Escape');
      await browser.page.waitForSelector('#entry[hidden]', DOM_TIMEOUT);
      expect(await browser.page.$eval('#detail', (node) => (node as unknown as { hidden: boolean }).hidden)).toBe(false);
      await browser.page.keyboard.press('Escape');
      await browser.page.waitForSelector('#detail[hidden]', DOM_TIMEOUT);
      expect(await browser.page.evaluate(() => document.activeElement?.textContent)).toBe(HANDLED_STREAM);
      await dashboard.close();
    }
  }, 90_000);
});
