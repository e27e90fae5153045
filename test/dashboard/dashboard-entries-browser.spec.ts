import { mkdirSync } from 'node:fs';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { progressKey, resultKey } from '../../src/lifecycle/lifecycle-keys.js';
import { encodeRecord } from '../../src/lifecycle/lifecycle-records.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { AllowOperators } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** Entry n of the seeded stream has id `${BASE + n}-0`. */
const BASE = 1_767_000_000_000;
const STREAM = 'ledger';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** The page's DOM as the callbacks below use it: they run in Chromium, and the tests compile without lib "dom". */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  readonly hidden: boolean;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
};
declare const location: { hash: string };

const ids = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, n) => `${BASE + from + n}-0`);

describe.skipIf(!HAS_CHROMIUM)('dashboard entries and entry view in headless Chromium', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  /** A prompt() is answered with the text a test sets in `browser.answer`; until then every dialog is dismissed. */
  const browser = useDashboardBrowser();

  async function seed(count: number): Promise<void> {
    const pipeline = redis.client.pipeline();
    for (let n = 0; n < count; n++) pipeline.xadd(STREAM, `${BASE + n}-0`, 'pattern', STREAM, 'data', JSON.stringify({ n, customer: `c-${n % 7}` }));
    await pipeline.exec();
  }

  const shownEntries = () => browser.page.$$eval('#entries tr[data-entry]', (rows) => rows.map((row) => row.dataset.entry));
  const untilEntries = (count: number) => browser.page.waitForFunction((count) => document.querySelectorAll('#entries tr[data-entry]').length === count, DOM_TIMEOUT, count);
  const hash = () => browser.page.evaluate(() => location.hash);
  const entryText = () => browser.page.$eval('#entry', (node) => node.textContent ?? '');
  const untilState = (state: string) => browser.page.waitForFunction((state) => document.querySelector('#entry [data-state]')?.dataset.state === state, DOM_TIMEOUT, state);

  async function openStream(name: string): Promise<void> {
    await browser.page.waitForSelector(`#streams tr[data-stream="${name}"] [data-col="name"] button`, DOM_TIMEOUT);
    await browser.page.locator(`#streams tr[data-stream="${name}"] [data-col="name"] button`).click();
  }

  async function openById(id: string): Promise<void> {
    await browser.page.locator('#entries .entries-find input').fill(id);
    await browser.page.locator('#entries .entries-find button').click();
  }

  for (const adapter of ['express', 'fastify'] as const) {
    it(`lists a stream's entries newest first, pages them, then oldest first and by a time range; the URL names the stream (${adapter})`, async () => {
      await seed(60);
      const app = await dashboard.start({ refreshInterval: 500, streams: [STREAM] }, adapter);
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await openStream(STREAM);
      await untilEntries(50);
      expect(await shownEntries()).toEqual(ids(10, 60).reverse());
      expect(await browser.page.$eval('#entries', (node) => node.textContent)).toContain('Entries (60 in all)');
      expect(await browser.page.$eval(`#entries tr[data-entry="${BASE + 59}-0"]`, (node) => node.textContent)).toContain(`${new Date(BASE + 59).toISOString()}pattern = ledger\ndata = {"n":59,"customer":"c-3"}`);
      expect(await hash()).toBe(`#/stream/${STREAM}`);
      await browser.page.locator('#entries p[data-list="entries"] button[data-page="next"]').click();
      await untilEntries(10);
      expect(await shownEntries()).toEqual(ids(0, 10).reverse());

      await browser.page.select('#entries select[name="order"]', 'oldest');
      await untilEntries(50);
      expect(await shownEntries()).toEqual(ids(0, 50));
      // A time range: the ids of those ms.
      await browser.page.locator('#entries input[name="from"]').fill(new Date(BASE + 5).toISOString());
      await browser.page.locator('#entries input[name="to"]').fill(new Date(BASE + 9).toISOString());
      await browser.page.locator('#entries .entries-range button[type="submit"]').click();
      await untilEntries(5);
      expect(await shownEntries()).toEqual(ids(5, 10));
      expect(await browser.page.$eval('#entries h3', (node) => node.textContent)).toBe('Entries (60 in all; 5 in the range)');
      // What the operator typed stays through refreshes.
      const refreshed = await browser.page.$eval('body', (node) => node.dataset.refreshedAt);
      await browser.page.waitForFunction((before) => (document.querySelector('body') as PageElement).dataset.refreshedAt !== before, DOM_TIMEOUT, refreshed);
      expect(await browser.page.$eval('#entries input[name="from"]', (node) => (node as unknown as { value: string }).value)).toBe(new Date(BASE + 5).toISOString());
      // A bad time: the server's answer names the parameter.
      await browser.page.locator('#entries input[name="to"]').fill('yesterday');
      await browser.page.locator('#entries .entries-range button[type="submit"]').click();
      await browser.page.waitForFunction(() => document.querySelector('#entries .warn')?.textContent?.includes('Invalid option "to"') === true, DOM_TIMEOUT);
    }, 60_000);

    it(`opens an entry by id: formatted JSON or raw, headers and trace id, per group; a deep link reopens it, back and forward work (${adapter})`, async () => {
      const headers = JSON.stringify({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tenant: 'acme' });
      const id = (await redis.client.xadd(STREAM, '*', 'pattern', STREAM, 'data', '{"order":7,"lines":[1,2]}', 'headers', headers, 'note', 'plain text'))!;
      await redis.client.xgroup('CREATE', STREAM, AUDIT_GROUP, '0');
      await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', STREAM, '>');
      const app = await dashboard.start({ refreshInterval: 500, streams: [STREAM] }, adapter);
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await openStream(STREAM);
      await untilEntries(1);
      await openById(id);
      await untilState('running');
      expect(await hash()).toBe(`#/stream/${STREAM}/entry/${id}`);
      expect(await browser.page.$eval('#entry [data-wire="trace-id"]', (node) => node.textContent)).toBe(TRACE_ID);
      expect(await browser.page.$eval('#entry [data-wire="pattern"]', (node) => node.textContent)).toBe(STREAM);
      expect(await browser.page.$$eval('#entry tr[data-header]', (rows) => rows.map((row) => row.textContent))).toEqual([`traceparent00-${TRACE_ID}-00f067aa0ba902b7-01`, 'tenantacme']);
      const cells = await browser.page.$$eval(`#entry tr[data-group="${AUDIT_GROUP}"] td`, (tds) => tds.map((td) => td.textContent));
      expect(cells).toEqual([AUDIT_GROUP, 'running', 'audit-1', expect.stringMatching(/^[\d.]+ m?s$/), '1', '', '']);
      const values = () => browser.page.$$eval('#entry pre[data-format]', (nodes) => nodes.map((node) => [node.dataset.format, node.textContent]));
      expect(await values()).toEqual([['raw', 'ledger'], ['json', '{\n  "order": 7,\n  "lines": [\n    1,\n    2\n  ]\n}'], ['json', JSON.stringify(JSON.parse(headers), null, 2)], ['raw', 'plain text']]);
      await browser.page.locator('#entry button[data-action="format"]').click();
      await browser.page.waitForFunction(() => document.querySelectorAll('#entry pre[data-format="json"]').length === 0, DOM_TIMEOUT);
      expect((await values())[1]).toEqual(['raw', '{"order":7,"lines":[1,2]}']);

      // The URL opens the same view after a reload.
      await browser.page.reload({ waitUntil: 'domcontentloaded' });
      await untilState('running');
      expect(await browser.page.$eval('#entries', (node) => node.hidden)).toBe(false);
      // Back: the stream without the entry; forward: the entry again.
      await browser.page.goBack();
      await browser.page.waitForFunction(() => document.querySelector('#entry')?.hidden === true, DOM_TIMEOUT);
      expect(await hash()).toBe(`#/stream/${STREAM}`);
      expect(await browser.page.$eval('#entries', (node) => node.hidden)).toBe(false);
      await browser.page.goForward();
      await untilState('running');

      // An id nothing has: answered clearly.
      await openById('1-0');
      await browser.page.waitForSelector('#entry [data-not-found]', DOM_TIMEOUT);
      expect(await entryText()).toContain('no such entry (acknowledged and deleted, trimmed, or its dead letter redriven or purged)');
      expect(await hash()).toBe(`#/stream/${STREAM}/entry/1-0`);
    }, 60_000);
  }

  for (const adapter of ['express', 'fastify'] as const) {
    it(`acts from the entry view on ${adapter}: claim, ack, cancel with a reason, redrive its dead letter`, async () => {
      const first = (await redis.client.xadd(STREAM, '*', 'pattern', STREAM, 'data', '{"n":1}'))!;
      const second = (await redis.client.xadd(STREAM, '*', 'pattern', STREAM, 'data', '{"n":2}'))!;
      await redis.client.xgroup('CREATE', STREAM, AUDIT_GROUP, '0');
      await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 2, 'STREAMS', STREAM, '>');
      const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: [STREAM] }, adapter);
      await browser.page.goto(`${app.page}#/stream/${STREAM}/entry/${first}`, { waitUntil: 'domcontentloaded' });
      await untilState('running');
      const row = `#entry tr[data-group="${AUDIT_GROUP}"]`;

      browser.answer = 'ops-1';
      await browser.page.locator(`${row} button[data-action="claim"]`).click();
      await browser.page.waitForFunction((row) => document.querySelector(`${row} [data-col="owner"]`)?.textContent === 'ops-1', DOM_TIMEOUT, row);
      expect(((await redis.client.xpending(STREAM, AUDIT_GROUP, first, first, 1)) as [string, string][])[0]![1]).toBe('ops-1');

      await browser.page.locator(`${row} button[data-action="ack"]`).click();
      await untilState('done');
      expect(browser.dialogs.map((dialog) => dialog.type)).toEqual(['prompt', 'confirm']);
      expect(browser.dialogs[1]!.message).toBe(`Acknowledge entry ${first} of group "\u2068${AUDIT_GROUP}\u2069" on "\u2068${STREAM}\u2069"? It will not be handled again.`);
      expect(Number(((await redis.client.xpending(STREAM, AUDIT_GROUP)) as [number])[0])).toBe(1);

      // Cancel the other one, with the operator's reason.
      await browser.page.goto(`${app.page}#/stream/${STREAM}/entry/${second}`, { waitUntil: 'domcontentloaded' });
      await untilState('running');
      browser.answer = 'customer asked';
      await browser.page.locator('#entry button[data-action="cancel"]').click();
      await untilState('dead-lettered');
      expect(await redis.client.xlen(STREAM)).toBe(1);
      expect(await browser.page.$eval(row, (node) => node.textContent)).toContain('cancelled: customer asked');
      const [[deadLetterId]] = (await redis.client.xrange(deadLetterKey(STREAM), '-', '+')) as [[string, string[]]];
      expect(app.logger.lines).toContain(`cancel entry: stream "${STREAM}", id "${second}": cancelled (was pending), dead letter ${deadLetterId}`);

      // Redrive its dead letter: the view follows it to its new id.
      browser.answer = '';
      await browser.page.locator(`${row} button[data-action="redrive"]`).click();
      await browser.page.waitForFunction((second) => location.hash.startsWith('#/stream/ledger/entry/') && !location.hash.endsWith(second), DOM_TIMEOUT, second);
      await untilState('waiting');
      const [, [redrivenId]] = (await redis.client.xrange(STREAM, '-', '+')) as [unknown, [string]];
      expect(await hash()).toBe(`#/stream/${STREAM}/entry/${redrivenId}`);
      expect(await redis.client.xlen(deadLetterKey(STREAM))).toBe(0);
      expect(app.logger.lines).toContain(`redrive dead letters: stream "${STREAM}", ids ["${deadLetterId}"]: 1 redriven, 0 skipped`);
    }, 60_000);
  }

  it('opens a delayed hold by a deep link to a stream no handler reads, and promotes it now from the view', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      await lastValueFrom(client.emit('later', new RedisStreamsRecord({ invoice: 42 }, { delay: 600_000 })));
    } finally {
      await client.close();
    }
    const [hold] = (await redis.client.zrange('{later}:delayed', 0, 0)) as [string];
    await redis.client.xadd(STREAM, '*', 'data', '{}');
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: [STREAM] });
    browser.answer = '';
    await browser.page.goto(`${app.page}#/stream/later/entry/${encodeURIComponent(hold)}`, { waitUntil: 'domcontentloaded' });
    await untilState('held');
    // The linked stream is shown by name, as if typed in.
    await browser.page.waitForSelector('#streams tr[data-stream="later"]', DOM_TIMEOUT);
    expect(await entryText()).toContain(`(held until ${new Date(Number(await redis.client.zscore('{later}:delayed', hold))).toISOString()})`);
    // Its fields, from its hold.
    expect(await browser.page.$$eval('#entry pre[data-format]', (nodes) => nodes.map((node) => node.textContent))).toEqual(['later', '{\n  "invoice": 42\n}']);
    await browser.page.locator('#entry button[data-action="promote"]').click();
    await untilState('waiting');
    const [[id, fields]] = (await redis.client.xrange('later', '-', '+')) as [[string, string[]]];
    expect(fields).toEqual(['pattern', 'later', 'data', '{"invoice":42}']);
    expect(await hash()).toBe(`#/stream/later/entry/${id}`);
    expect(await redis.client.zcard('{later}:delayed')).toBe(0);
    // Selecting another stream closes the entry, and the URL names that stream.
    await openStream(STREAM);
    await browser.page.waitForFunction(() => document.querySelector('#entry')?.hidden === true, DOM_TIMEOUT);
    expect(await hash()).toBe(`#/stream/${STREAM}`);
  }, 60_000);

  it('shows the kept progress and last error with the actions that apply; writes docs/images/dashboard-entry.png when DASHBOARD_SCREENSHOT is set', async () => {
    const headers = JSON.stringify({ traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, tenant: 'acme' });
    const id = (await redis.client.xadd(STREAM, '*', 'pattern', STREAM, 'data', '{"invoice":"INV-2026-0042","amount":129.9,"currency":"EUR"}', 'headers', headers))!;
    await redis.client.xgroup('CREATE', STREAM, AUDIT_GROUP, '0');
    await redis.client.xgroup('CREATE', STREAM, 'billing', '$');
    await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', STREAM, '>');
    await redis.client.set(progressKey(STREAM, id), encodeRecord({ value: { done: 40, of: 100 }, delivery: 1, at: new Date().toISOString() }));
    await redis.client.set(resultKey(STREAM, id), encodeRecord({ state: 'failed', error: { name: 'Error', message: 'card declined' }, delivery: 1, at: new Date().toISOString() }));
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: [STREAM] });
    await browser.page.setViewport({ width: 1000, height: 900 });
    await browser.page.goto(`${app.page}#/stream/${STREAM}/entry/${id}`, { waitUntil: 'domcontentloaded' });
    await untilState('running');
    expect(await browser.page.$eval('#entry [data-lifecycle="progress"]', (node) => node.textContent)).toBe('{\n  "done": 40,\n  "of": 100\n}');
    expect(await browser.page.$eval('#entry [data-lifecycle="error"]', (node) => node.textContent)).toBe('Error: card declined');
    expect(await browser.page.$$eval('#entry button[data-action]', (buttons) => buttons.map((button) => button.dataset.action))).toEqual(['format', 'cancel', 'claim', 'ack']);
    if (process.env.DASHBOARD_SCREENSHOT === undefined) return;
    mkdirSync('docs/images', { recursive: true });
    await (await browser.page.$('#entry'))!.screenshot({ path: 'docs/images/dashboard-entry.png' });
  }, 60_000);

  it('renders hostile field, header and group names as text in the list and the view; a value cut to 64 KiB comes whole on demand', async () => {
    const hostile = '<img src=x onerror=alert(1)>';
    const large = 'y'.repeat(70 * 1024);
    const id = (await redis.client.xadd(STREAM, '*', hostile, hostile, 'headers', JSON.stringify({ [hostile]: hostile }), 'big', large))!;
    await redis.client.xgroup('CREATE', STREAM, hostile, '0');
    await redis.client.xreadgroup('GROUP', hostile, hostile, 'COUNT', 1, 'STREAMS', STREAM, '>');
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: [STREAM] });
    await browser.page.goto(`${app.page}#/stream/${STREAM}`, { waitUntil: 'domcontentloaded' });
    await untilEntries(1);
    await browser.page.locator(`#entries tr[data-entry="${id}"] button`).click();
    await untilState('running');
    expect(await browser.page.$$eval('img', (nodes) => nodes.length)).toBe(0);
    expect(await browser.page.$eval(`#entries tr[data-entry="${id}"]`, (node) => node.textContent)).toContain(`${hostile} = ${hostile}`);
    expect(await browser.page.$$eval('#entry tr[data-header]', (rows) => rows.map((row) => row.textContent))).toEqual([`${hostile}${hostile}`]);
    expect(await browser.page.$eval('#entry tr[data-group] td', (node) => node.textContent)).toBe(hostile);
    const bigValue = () => browser.page.$$eval('#entry pre[data-format]', (nodes) => nodes.map((node) => node.textContent ?? '').find((text) => text.startsWith('yyy')) ?? '');
    expect(await bigValue()).toBe(`${large.slice(0, 64 * 1024)} … (70.0 KiB in all)`);
    await browser.page.locator('#entry button[data-action="whole"]').click();
    await browser.page.waitForFunction(() => !document.querySelector('#entry button[data-action="whole"]'), DOM_TIMEOUT);
    expect(await bigValue()).toBe(large);
    expect(browser.dialogs).toEqual([]);
  }, 60_000);

  it('writes docs/images/dashboard-entries.png when DASHBOARD_SCREENSHOT is set', async () => {
    if (process.env.DASHBOARD_SCREENSHOT === undefined) return;
    await seed(80);
    const app = await dashboard.start({ refreshInterval: 500, streams: [STREAM] });
    await browser.page.setViewport({ width: 1000, height: 720 });
    await browser.page.goto(`${app.page}#/stream/${STREAM}`, { waitUntil: 'domcontentloaded' });
    await untilEntries(50);
    await browser.page.locator('#entries input[name="from"]').fill(new Date(BASE + 20).toISOString());
    await browser.page.locator('#entries input[name="to"]').fill(new Date(BASE + 79).toISOString());
    await browser.page.locator('#entries .entries-range button[type="submit"]').click();
    await browser.page.waitForFunction(() => document.querySelector('#entries h3')?.textContent?.includes('not counted') === true, DOM_TIMEOUT);
    const box = (await (await browser.page.$('#entries'))!.boundingBox())!;
    mkdirSync('docs/images', { recursive: true });
    await browser.page.screenshot({ path: 'docs/images/dashboard-entries.png', clip: { x: box.x, y: box.y, width: box.width, height: 560 }, captureBeyondViewport: true });
  }, 60_000);
});
