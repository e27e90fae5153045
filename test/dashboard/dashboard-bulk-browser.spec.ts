import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, HANDLED_STREAM, PARTITIONED_STREAM, seedStream } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, untilOverviewCell, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { ADAPTERS, AllowOperators } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** The page's DOM as the callbacks below use it (they run in Chromium; the tests compile without lib "dom"). */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  querySelector(selector: string): PageElement | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
};

describe.skipIf(!HAS_CHROMIUM)('dashboard permissions, find and bulk actions in headless Chromium', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  const browser = useDashboardBrowser();

  const untilCell = (stream: string, col: string, expected: string) => untilOverviewCell(browser.page, stream, col, expected);

  async function openStream(stream: string): Promise<void> {
    await browser.page.locator(`#streams tr[data-stream="${stream}"] [data-col="name"] button`).click();
  }

  const buttonLabels = (selector: string) => browser.page.$$eval(selector, (buttons) => buttons.map((button) => button.textContent));

  for (const adapter of ADAPTERS) {
    it(`${adapter}: offers only the action kinds the actions option allows`, async () => {
      const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 1, deadLetters: 1 });
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, actions: ['redrive'] }, adapter);
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '1');
      expect(await browser.page.$eval('#mode', (node) => node.textContent)).toBe('actions: redrive');
      await openStream(HANDLED_STREAM);
      await browser.page.waitForSelector(`#detail tr[data-dead-letter="${deadLetterId}"]`, DOM_TIMEOUT);
      await browser.page.waitForSelector('#detail tr[data-id]', DOM_TIMEOUT);
      const labels = await buttonLabels('#detail button');
      expect(labels).toEqual(expect.arrayContaining(['Redrive selected', 'Redrive all', 'Redrive']));
      expect(labels.filter((label) => /Purge|Ack|Claim|Delete|Pause|Promote|Remove/.test(label ?? ''))).toEqual([]);

      browser.answer = true;
      await browser.page.$$eval(`#detail tr[data-dead-letter="${deadLetterId}"] button`, (buttons) => buttons.find((button) => button.textContent === 'Redrive')?.click());
      await untilCell(HANDLED_STREAM, 'dead-letters', '0');
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
      expect(browser.dialogs).toHaveLength(1);
    }, 40_000);
  }

  /** Fills the find form of the open stream and submits it. */
  async function findFor(target: 'entries' | 'dead-letters', query: { field: string; value: string } | { contains: string }): Promise<void> {
    await browser.page.waitForSelector('#find-form', DOM_TIMEOUT);
    await browser.page.select('#find-in', target);
    await browser.page.select('#find-mode', 'contains' in query ? 'contains' : 'field');
    await browser.page.$eval('#find-field', (input, value) => ((input as unknown as { value: string }).value = value), 'field' in query ? query.field : '');
    await browser.page.$eval('#find-value', (input, value) => ((input as unknown as { value: string }).value = value), 'contains' in query ? query.contains : query.value);
    await browser.page.locator('#find-form button[type="submit"]').click();
  }

  const progressText = () => browser.page.$eval('#find-progress', (node) => node.textContent);

  for (const adapter of ADAPTERS) {
    it(`${adapter}: finds entries by a field's value and dead letters by a substring, with progress, and opens a match`, async () => {
      const deadLetterIds = await seedStream(redis.client, HANDLED_STREAM, { entries: 40, pending: 0, deadLetters: 12 });
      const app = await dashboard.start({ refreshInterval: 500 }, adapter);
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'length', '40');
      await openStream(HANDLED_STREAM);
      const id27 = (await redis.client.xrange(HANDLED_STREAM, '-', '+'))[27]![0];
      await findFor('entries', { field: 'note', value: 'hello-27' });
      await browser.page.waitForFunction(() => document.querySelector('#find-progress')?.textContent?.startsWith('Done') === true, DOM_TIMEOUT);
      expect(await progressText()).toBe('Done: 1 match, 40 of 40 entries scanned.');
      expect(await browser.page.$$eval('#find-results tr[data-found]', (rows) => rows.map((row) => row.dataset.found))).toEqual([id27]);
      // Kept across refreshes.
      const refreshed = await browser.page.$eval('body', (node) => node.dataset.refreshedAt);
      await browser.page.waitForFunction((before) => (document.querySelector('body') as unknown as { dataset: Record<string, string> }).dataset.refreshedAt !== before, DOM_TIMEOUT, refreshed);
      expect(await browser.page.$$eval('#find-results tr[data-found]', (rows) => rows.length)).toBe(1);
      await browser.page.locator(`#find-results tr[data-found="${id27}"] button`).click();
      await browser.page.waitForSelector('#entry:not([hidden]) pre', DOM_TIMEOUT);
      expect(await browser.page.$$eval('#entry pre', (nodes) => nodes.map((node) => node.textContent))).toContain('hello-27');

      await findFor('dead-letters', { contains: 'hello-1' });
      // This scan's own end (the entries scan above also ended with "Done"): its text names dead letters.
      await browser.page.waitForFunction(() => /^Done: .* dead letters scanned/.test(document.querySelector('#find-progress')?.textContent ?? ''), DOM_TIMEOUT);
      // hello-1, hello-10, hello-11 among the 12 dead letters (entries 0-11).
      expect(await browser.page.$$eval('#find-results tr[data-found]', (rows) => rows.map((row) => row.dataset.found))).toEqual([deadLetterIds[1], deadLetterIds[10], deadLetterIds[11]]);
      expect(await progressText()).toBe('Done: 3 matches, 12 of 12 dead letters scanned.');
      if (adapter === 'express' && process.env.DASHBOARD_SCREENSHOT !== undefined) {
        mkdirSync('docs/images', { recursive: true });
        await (await browser.page.$('#find'))!.screenshot({ path: 'docs/images/dashboard-find.png' });
      }
    }, 40_000);
  }

  it('stops a long scan on Stop: no request after it, the progress says how far it got', async () => {
    for (let from = 0; from < 100_000; from += 5_000) {
      const pipeline = redis.client.pipeline();
      for (let n = from; n < from + 5_000; n++) pipeline.xadd('huge', '*', 'n', String(n));
      await pipeline.exec();
    }
    const app = await dashboard.start({ refreshInterval: 500, streams: ['huge'] });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell('huge', 'length', '100000');
    await openStream('huge');
    const finds: string[] = [];
    browser.page.on('request', (request) => {
      if (request.url().includes('/api/find')) finds.push(request.url());
    });
    await findFor('entries', { contains: 'never-there' });
    await browser.page.waitForFunction(() => document.querySelector('#find-progress')?.textContent?.startsWith('Scanning') === true, DOM_TIMEOUT);
    await browser.page.locator('#find-stop').click();
    await browser.page.waitForFunction(() => document.querySelector('#find-progress')?.textContent?.startsWith('Stopped') === true, DOM_TIMEOUT);
    const stopped = await progressText();
    const scanned = Number(/(\d+) of 100000 entries scanned/.exec(stopped ?? '')?.[1]);
    expect(scanned).toBeGreaterThan(0);
    expect(scanned).toBeLessThan(100_000);
    const asked = finds.length;
    // Two refreshes later, no find went out and the progress stands.
    for (let i = 0; i < 2; i++) {
      const refreshed = await browser.page.$eval('body', (node) => node.dataset.refreshedAt);
      await browser.page.waitForFunction((before) => (document.querySelector('body') as unknown as { dataset: Record<string, string> }).dataset.refreshedAt !== before, DOM_TIMEOUT, refreshed);
    }
    expect(finds).toHaveLength(asked);
    expect(await progressText()).toBe(stopped);
  }, 60_000);

  const bulkResult = () => browser.page.waitForSelector('#bulk-result', DOM_TIMEOUT).then(() => browser.page.$eval('#bulk-result', (node) => node.textContent));
  async function untilBulkResult(expected: string): Promise<void> {
    await browser.page.waitForFunction((text) => document.querySelector('#bulk-result')?.textContent === text, DOM_TIMEOUT, expected);
  }

  for (const adapter of ADAPTERS) {
    it(`${adapter}: redrives every dead letter a find matched, after a confirmation that says how many, and says what happened`, async () => {
      const ids = await seedStream(redis.client, HANDLED_STREAM, { entries: 14, pending: 0, deadLetters: 12 });
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500 }, adapter);
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '12');
      await openStream(HANDLED_STREAM);
      await findFor('dead-letters', { contains: 'hello-1' });
      const redrive = '#find-results button[data-action="redrive-matching"]';
      await browser.page.waitForSelector(redrive, DOM_TIMEOUT);
      expect(await browser.page.$eval(redrive, (node) => node.textContent)).toBe('Redrive all 3 matching');
      // Dismissed: nothing happens.
      await browser.page.locator(redrive).click();
      await waitFor(() => browser.dialogs.length === 1, 'the confirmation');
      expect(browser.dialogs[0]!.message).toBe(`Redrive every one of the dead letters of "\u2068${HANDLED_STREAM}\u2069" whose values contain "\u2068hello-1\u2069" (the find counted 3) back to the stream?`);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(12);

      browser.answer = true;
      await browser.page.locator(redrive).click();
      await untilBulkResult('Redrive: 3 redriven, 0 skipped.');
      await untilCell(HANDLED_STREAM, 'dead-letters', '9');
      expect((await redis.client.xrange(deadLetterKey(HANDLED_STREAM), '-', '+')).map(([id]) => id)).toEqual(ids.filter((_, n) => ![1, 10, 11].includes(n)));
      expect(app.logger.lines.filter((line) => line.startsWith('bulk redrive'))).toEqual([`bulk redrive dead letters: stream "${HANDLED_STREAM}", contains "hello-1", from "start": 12 gone through, 3 matching, 3 done, 0 skipped, next null`]);
      if (adapter === 'express' && process.env.DASHBOARD_SCREENSHOT !== undefined) {
        await browser.page.setViewport({ width: 1100, height: 900 });
        mkdirSync('docs/images', { recursive: true });
        await browser.page.screenshot({ path: 'docs/images/dashboard-bulk.png', fullPage: true });
      }
    }, 40_000);

    it(`${adapter}: acks selected pending entries, then all of a group, and promotes selected and all delayed entries`, async () => {
      await seedStream(redis.client, 'work', { entries: 5, pending: 5, deadLetters: 0 });
      const client = new RedisStreamsClient({ connection: redis.server.url });
      try {
        for (let n = 0; n < 3; n++) await lastValueFrom(client.emit('work', new RedisStreamsRecord({ n }, { delay: 600_000 + n * 1000 })));
      } finally {
        await client.close();
      }
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: ['work'] }, adapter);
      browser.answer = true;
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell('work', 'delayed', '3');
      await openStream('work');
      const pending = (await redis.client.xpending('work', AUDIT_GROUP, '-', '+', 10)) as [string][];
      for (const [id] of pending.slice(0, 2)) await browser.page.locator(`#detail tr[data-id="${id}"] input[type="checkbox"]`).click();
      await browser.page.locator('#detail button[data-action="ack-selected"]').click();
      await untilBulkResult('Acknowledge: 2 acknowledged, 0 skipped.');
      expect(browser.dialogs.at(-1)!.message).toBe(`Acknowledge 2 selected pending entries of group "\u2068${AUDIT_GROUP}\u2069" on "\u2068work\u2069"?`);
      expect((await redis.client.xpending('work', AUDIT_GROUP, '-', '+', 10) as [string][]).map(([id]) => id)).toEqual(pending.slice(2).map(([id]) => id));

      await browser.page.waitForFunction(() => document.querySelector('#detail button[data-action="ack-all"]')?.textContent === 'Ack all 3 pending', DOM_TIMEOUT);
      await browser.page.locator('#detail button[data-action="ack-all"]').click();
      await untilBulkResult('Acknowledge: 3 acknowledged, 0 skipped.');
      expect(browser.dialogs.at(-1)!.message).toBe(`Acknowledge ALL 3 pending entries of group "\u2068${AUDIT_GROUP}\u2069" on "\u2068work\u2069"? They will not be handled again.`);
      expect(await redis.client.xpending('work', AUDIT_GROUP)).toEqual([0, null, null, null]);

      const [first] = await redis.client.zrange('{work}:delayed', 0, 0);
      await browser.page.locator(`#detail tr[data-hold="${first}"] input[type="checkbox"]`).click();
      await browser.page.locator('#detail button[data-action="promote-selected"]').click();
      await untilBulkResult('Promote: 1 promoted, 0 skipped.');
      expect(await redis.client.zrange('{work}:delayed', 0, -1)).not.toContain(first);
      await browser.page.waitForFunction(() => document.querySelector('#detail button[data-action="promote-all"]')?.textContent === 'Promote all 2 held', DOM_TIMEOUT);
      await browser.page.locator('#detail button[data-action="promote-all"]').click();
      await untilBulkResult('Promote: 2 promoted, 0 skipped.');
      expect(await redis.client.zcard('{work}:delayed')).toBe(0);
      expect(await redis.client.xlen('work')).toBe(8);
      expect(await bulkResult()).toBe('Promote: 2 promoted, 0 skipped.');
    }, 40_000);
  }

  it("finds a partitioned stream's dead letters merged, and its entries only per partition", async () => {
    const app = await dashboard.start({ refreshInterval: 500 }, 'express', { partitioned: true });
    const p0 = await seedStream(redis.client, `${PARTITIONED_STREAM}:p0`, { entries: 2, pending: 0, deadLetters: 2 });
    const p1 = await seedStream(redis.client, `${PARTITIONED_STREAM}:p1`, { entries: 1, pending: 0, deadLetters: 1 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(PARTITIONED_STREAM, 'dead-letters', '3');
    await openStream(PARTITIONED_STREAM);
    await browser.page.waitForSelector('#find-form', DOM_TIMEOUT);
    expect(await browser.page.$$eval('#find-in option', (options) => options.map((option) => option.textContent))).toEqual(['dead letters']);
    expect(await browser.page.$eval('#find', (node) => node.textContent)).toContain('Entries are found per partition: select a partition above.');
    await findFor('dead-letters', { contains: 'hello-' });
    await browser.page.waitForFunction(() => document.querySelector('#find-progress')?.textContent?.startsWith('Done') === true, DOM_TIMEOUT);
    const found = await browser.page.$$eval('#find-results tr[data-found]', (rows) => rows.map((row) => row.dataset.found));
    expect(found.sort()).toEqual([...p0, ...p1].sort());
  }, 40_000);
});
