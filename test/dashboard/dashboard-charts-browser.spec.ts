import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AUDIT_GROUP, seedStream, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { ADAPTERS, AllowOperators } from '../helpers/dashboard-http.js';
import { RoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { samplesAfter } from '../helpers/dashboard-series.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The page's charts, drawn from the samples dashboard-charts.spec.ts checks against Redis. */
const STREAM = 'charted';
/** Longer than the other pages' waits: a chart waits for the module's next samples. */
const CHART_TIMEOUT = { timeout: 20_000 };

declare const document: { querySelector(selector: string): { dataset: Record<string, string | undefined> } | null; body: { dataset: Record<string, string | undefined> } };

describe.skipIf(!HAS_CHROMIUM)('dashboard charts in headless Chromium', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  const browser = useDashboardBrowser({ viewport: { width: 1000, height: 900 } });

  for (const adapter of ADAPTERS) {
    it(`draws the stream's and each group's charts in its details, from the samples (${adapter})`, async () => {
      const { page } = browser;
      await seedStream(redis.client, STREAM, { entries: 12, pending: 4, deadLetters: 2 });
      const app = await dashboard.start({ streams: [STREAM], sampleInterval: 500, refreshInterval: 500 }, adapter);
      await samplesAfter(app, STREAM, 0, 3);
      await page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await page.locator(`#streams tr[data-stream="${STREAM}"] [data-col="name"] button`).click();
      await page.waitForSelector(`[data-charts="group"][data-group="${AUDIT_GROUP}"] [data-series="pending"] polyline`, CHART_TIMEOUT);
      const latest = (selector: string) => page.$eval(selector, (node) => (node as unknown as { dataset: Record<string, string> }).dataset.latest);
      expect(await latest('[data-charts="stream"] [data-series="dead-letters"]')).toBe('2');
      expect(await latest(`[data-charts="group"][data-group="${AUDIT_GROUP}"] [data-series="pending"]`)).toBe('4');
      expect(await page.$$eval('[data-view="charts"] svg', (nodes) => nodes.length)).toBe(2 + 3);
      if (process.env.DASHBOARD_SCREENSHOT !== undefined && adapter === 'express') {
        for (let n = 0; n < 8; n++) {
          await redis.client.xadd(STREAM, '*', 'n', String(n));
          await new Promise((resolve) => setTimeout(resolve, 300 + 200 * (n % 3)));
        }
        await page.waitForFunction(() => Number(document.querySelector('[data-charts="stream"] [data-series="in-rate"]')?.dataset.points) >= 8, CHART_TIMEOUT);
        const charts = await page.$('[data-view="charts"]');
        mkdirSync('docs/images', { recursive: true });
        await charts!.screenshot({ path: 'docs/images/dashboard-charts.png' });
      }
    }, 60_000);
  }

  it('an app redeployed with sampling off: once the page reads its new session (an action refused for its old CSRF token), the charts drawn before are taken away', async () => {
    const { page } = browser;
    await seedStream(redis.client, STREAM, { entries: 12, pending: 4, deadLetters: 2 });
    const deployed = (sampleInterval: number, csrfSecret: string) => ({ streams: [STREAM], sampleInterval, refreshInterval: 500, readOnly: false, guard: AllowOperators, csrfSecret });
    const replicas: DashboardApp[] = [];
    let proxy: RoundRobinProxy | undefined;
    try {
      for (const options of [deployed(500, 'a'.repeat(32)), deployed(0, 'b'.repeat(32))]) replicas.push(await startDashboardApp(redis.server.url, options));
      const [sampling, redeployed] = replicas as [DashboardApp, DashboardApp];
      await samplesAfter(sampling, STREAM, 0, 3);
      proxy = await RoundRobinProxy.start([sampling.origin]);
      await page.goto(`${proxy.origin}/streams`, { waitUntil: 'domcontentloaded' });
      await page.locator(`#streams tr[data-stream="${STREAM}"] [data-col="name"] button`).click();
      await page.waitForSelector(`[data-charts="group"][data-group="${AUDIT_GROUP}"] [data-series="pending"] polyline`, CHART_TIMEOUT);
      // Paused: the page asks nothing until the action below, whose refresh is the first the redeployed app answers.
      await page.locator('#refresh-toggle').click();
      await page.waitForSelector('body[data-refresh="paused"]', DOM_TIMEOUT);
      proxy.upstreams = [redeployed.origin];
      const [[acked]] = (await redis.client.xpending(STREAM, AUDIT_GROUP, '-', '+', 1)) as [[string]];
      const before = await page.evaluate(() => document.body.dataset.refreshedAt);
      browser.answer = true;
      await page.locator(`#detail tr[data-id="${acked}"] button.danger`).click();
      await page.waitForFunction(
        (id, at) => document.querySelector(`#detail tr[data-id="${id}"]`) === null && document.body.dataset.refreshedAt !== at,
        DOM_TIMEOUT,
        acked,
        before,
      );
      expect(redeployed.logger.lines).toContain('refused "/streams/api/pending/ack": missing, wrong or expired CSRF token');
      expect(((await redis.client.xpending(STREAM, AUDIT_GROUP)) as [number])[0]).toBe(3);
      expect(await page.$$eval('#detail [data-view="charts"]', (nodes) => nodes.length)).toBe(0);
    } finally {
      await proxy?.close();
      for (const replica of replicas) await replica.close();
    }
  }, 60_000);

  it('draws the charts before the views below them and in place on each refresh: the find form does not move once shown, so a click aimed at it lands', async () => {
    const { page } = browser;
    await seedStream(redis.client, STREAM, { entries: 12, pending: 4, deadLetters: 2 });
    const app = await dashboard.start({ streams: [STREAM], sampleInterval: 500, refreshInterval: 500 });
    await samplesAfter(app, STREAM, 0, 3);
    await page.goto(app.page, { waitUntil: 'domcontentloaded' });
    // Where the find form is on the page after every change of the page once it is shown (measured before it is painted).
    await page.evaluate(`{
      const find = document.getElementById('find');
      window.findTops = new Set();
      new MutationObserver(() => {
        if (!find.hidden) window.findTops.add(find.getBoundingClientRect().top + window.scrollY);
      }).observe(document.querySelector('main'), { childList: true, subtree: true, characterData: true, attributes: true });
    }`);
    await page.locator(`#streams tr[data-stream="${STREAM}"] [data-col="name"] button`).click();
    await page.waitForSelector(`[data-charts="group"][data-group="${AUDIT_GROUP}"] [data-series="pending"] polyline`, CHART_TIMEOUT);
    for (let refresh = 0; refresh < 3; refresh++) {
      const before = await page.$eval('body', (node) => (node as unknown as { dataset: Record<string, string> }).dataset.refreshedAt);
      await page.waitForFunction((at) => (document.querySelector('body') as unknown as { dataset: Record<string, string> }).dataset.refreshedAt !== at, CHART_TIMEOUT, before);
    }
    const tops = (await page.evaluate('[...window.findTops]')) as number[];
    expect(tops).toEqual([tops[0]]);
  }, 60_000);
});
