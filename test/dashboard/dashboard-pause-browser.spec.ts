import { describe, expect, it } from 'vitest';
import { pausedKey } from '../../src/flow/flow-keys.js';
import { pauseGroup } from '../../src/flow/pause-state.js';
import { partitionStreamKey } from '../../src/partitions/partition-keys.js';
import { HANDLED_STREAM, PARTITIONED_STREAM } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { AllowOperators } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** The page's DOM as the callbacks below use it (the tests compile without lib "dom"). */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  querySelector(selector: string): PageElement | null;
}
declare const document: { querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement> };

/** The Pause / Resume buttons of the page (the routes and their guards: dashboard-pause.spec.ts). */
describe.skipIf(!HAS_CHROMIUM)('dashboard: pause and resume from the page (headless Chromium)', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  const browser = useDashboardBrowser({ answer: true });

  /** Waits until the overview's GROUP cell of `stream` reads `text`. */
  function untilGroupCell(stream: string, text: string): Promise<unknown> {
    return browser.page.waitForFunction(
      (stream, text) => [...document.querySelectorAll('#streams tbody tr')].find((row) => row.dataset.stream === stream)?.querySelector('[data-col="group"]')?.textContent === text,
      DOM_TIMEOUT,
      stream,
      text,
    );
  }

  it('marks a paused group in the overview, and its Pause / Resume button (confirmed) changes it for every worker', async () => {
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500 }, 'express', { partitioned: true });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilGroupCell(HANDLED_STREAM, 'billing');

    // Paused elsewhere (the CLI): the page shows it on the next refresh, a partitioned stream's on each partition too.
    await pauseGroup(redis.client, PARTITIONED_STREAM, 'billing');
    await untilGroupCell(PARTITIONED_STREAM, 'billing paused');
    await untilGroupCell(partitionStreamKey(PARTITIONED_STREAM, 1), 'billing paused');

    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    await browser.page.locator('#detail button[data-action="pause"]').click();
    await untilGroupCell(HANDLED_STREAM, 'billing paused');
    expect(browser.dialogs).toEqual([{ type: 'confirm', message: `Pause group "\u2068billing\u2069" on "\u2068${HANDLED_STREAM}\u2069" for every worker? They stop reading new entries within a second; handlers already running finish, nothing is lost.` }]);
    expect(await redis.client.hexists(pausedKey(HANDLED_STREAM), 'billing')).toBe(1);

    await browser.page.locator('#detail button[data-action="resume"]').click();
    await untilGroupCell(HANDLED_STREAM, 'billing');
    expect(await redis.client.exists(pausedKey(HANDLED_STREAM))).toBe(0);
    expect(browser.dialogs).toHaveLength(2);
  }, 60_000);

  it('read-only: the pause state shows, no Pause button', async () => {
    const app = await dashboard.start({ refreshInterval: 500 });
    await pauseGroup(redis.client, HANDLED_STREAM, 'billing');
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilGroupCell(HANDLED_STREAM, 'billing paused');
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    await browser.page.waitForSelector('#detail h3', DOM_TIMEOUT);
    expect(await browser.page.$$('#detail button[data-action]')).toHaveLength(0);
    expect(await browser.page.$eval('#detail', (node) => node.textContent)).toContain('Paused for every worker since');
  }, 60_000);
});
