import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RedisStreamsClient } from '../../src/client/redis-streams-client.js';
import { RedisStreamsRecord } from '../../src/client/redis-streams-record.js';
import { RedisStreamsScheduler } from '../../src/client/redis-streams-scheduler.js';
import { pauseGroup } from '../../src/flow/pause-state.js';
import { DeadLetterService } from '../../src/recovery/dead-letter.service.js';
import { deadLetterKey } from '../../src/redis/keys.js';
import { AUDIT_GROUP, HANDLED_STREAM, seedStream, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { useDashboardApp } from '../helpers/use-dashboard-app.js';
import { capabilitiesOf } from '../helpers/capabilities.js';
import { DOM_TIMEOUT, HAS_CHROMIUM, SCREENSHOTS, untilOverviewCell, useDashboardBrowser } from '../helpers/dashboard-browser.js';
import { RoundRobinProxy } from '../helpers/round-robin-proxy.js';
import { AllowOperators } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';
import { waitFor } from '../helpers/wait.js';

/** A name that runs script if anything renders it as markup. */
const HOSTILE = '<img src=x onerror=alert(1)>';

/** The page's DOM as the callbacks below use it: they run in Chromium, and the tests compile without lib "dom". */
interface PageElement {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  querySelector(selector: string): PageElement | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement> & Iterable<PageElement>;
};

describe.skipIf(!HAS_CHROMIUM)('dashboard in headless Chromium', () => {
  const redis = useRedisServer();
  const dashboard = useDashboardApp(redis);

  const browser = useDashboardBrowser();

  /** Moves the pending entry `id` of `stream` (group audit) to its dead letters; returns the dead letter's id. */
  async function seedDeadLetter(stream: string, id: string): Promise<string[]> {
    const moved = await new DeadLetterService(redis.client).moveToDeadLetter({ stream, group: AUDIT_GROUP, ids: [id], reason: 'manual', error: 'boom' });
    return moved.outcomes.map((outcome) => outcome.deadLetterId as string);
  }

  /** The text of the overview cell `col` in the row of `stream` (and `group`), or null. */
  function overviewCell(stream: string, col: string, group?: string): Promise<string | null> {
    return browser.page.evaluate(
      (stream, col, group) => {
        const rows = [...document.querySelectorAll('#streams tbody tr')];
        const row = rows.find((one) => one.dataset.stream === stream && (group === undefined || one.dataset.group === group));
        return row?.querySelector(`[data-col="${col}"]`)?.textContent ?? null;
      },
      stream,
      col,
      group,
    );
  }

  const untilCell = (stream: string, col: string, expected: string, group?: string) => untilOverviewCell(browser.page, stream, col, expected, group);

  it("loads and shows the handlers' stream with the length, pending and dead-letter counts Redis reports", async () => {
    await seedStream(redis.client, HANDLED_STREAM, { entries: 7, pending: 3, deadLetters: 2 });
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500 });
    const response = await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");

    const pending = Number((await redis.client.xpending(HANDLED_STREAM, AUDIT_GROUP) as [number])[0]);
    expect(pending).toBe(3);
    await untilCell(HANDLED_STREAM, 'length', String(await redis.client.xlen(HANDLED_STREAM)));
    await untilCell(HANDLED_STREAM, 'dead-letters', String(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))));
    await untilCell(HANDLED_STREAM, 'pending', String(pending), AUDIT_GROUP);
    expect(await overviewCell(HANDLED_STREAM, 'length')).toBe('7');
    expect(await overviewCell(HANDLED_STREAM, 'dead-letters')).toBe('2');
    expect(await browser.page.$eval('#mode', (node) => node.textContent)).toBe('actions enabled');
    // The sections not in use (bulk results, details, entries…) take no room: none shows as an empty box.
    const shownHidden = await browser.page.$$eval('main > section[hidden]', (nodes) =>
      (nodes as unknown as Array<{ id: string; getBoundingClientRect(): { height: number } }>).filter((node) => node.getBoundingClientRect().height > 0).map((node) => node.id),
    );
    expect(shownHidden).toEqual([]);

    // Delayed entries held for a minute: the page shows the count Redis holds, none due.
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      for (let n = 0; n < 2; n++) await lastValueFrom(client.emit(HANDLED_STREAM, new RedisStreamsRecord({ n }, { delay: 60_000 })));
    } finally {
      await client.close();
    }
    await untilCell(HANDLED_STREAM, 'delayed', String(await redis.client.zcard(`{${HANDLED_STREAM}}:delayed`)));
    expect(await overviewCell(HANDLED_STREAM, 'delayed')).toBe('2');
    expect(await overviewCell(HANDLED_STREAM, 'delayed-due')).toBe('0');

    // Live: a new entry shows without a reload, and (where Redis counts entries added) as an in-rate.
    const rates = (await capabilitiesOf(redis.client)).lagTracking;
    const rateSeen = browser.page.waitForFunction(
      (stream) => {
        const row = [...document.querySelectorAll('#streams tbody tr')].find((one) => one.dataset.stream === stream);
        return Number(row?.querySelector('[data-col="in-rate"]')?.textContent) > 0;
      },
      { timeout: 15_000, polling: 'mutation' },
      HANDLED_STREAM,
    );
    await redis.client.xadd(HANDLED_STREAM, '*', 'pattern', HANDLED_STREAM, 'data', '{"n":99}');
    await untilCell(HANDLED_STREAM, 'length', '8');
    if (rates) await rateSeen;
    else {
      rateSeen.catch(() => undefined);
      expect(await overviewCell(HANDLED_STREAM, 'in-rate')).toBe('—');
    }
    expect(browser.dialogs).toEqual([]);
  }, 40_000);

  it('redrives a dead letter from the page after the confirmation, and the page updates', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 0, deadLetters: 1 });
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(HANDLED_STREAM, 'dead-letters', '1');

    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    const redrive = `#detail tr[data-dead-letter="${deadLetterId}"] button`;
    await browser.page.waitForSelector(redrive, DOM_TIMEOUT);
    // A dismissed confirmation changes nothing.
    await browser.page.$$eval(redrive, (buttons) => buttons.find((button) => button.textContent === 'Redrive')?.click());
    await waitFor(() => browser.dialogs.length === 1, 'the confirmation');
    expect(browser.dialogs[0]).toEqual({ type: 'confirm', message: `Redrive dead letter ${deadLetterId} back to "\u2068${HANDLED_STREAM}\u2069"?` });
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(1);

    browser.answer = true;
    await browser.page.$$eval(redrive, (buttons) => buttons.find((button) => button.textContent === 'Redrive')?.click());
    await untilCell(HANDLED_STREAM, 'dead-letters', '0');
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
    // Back in the stream as a new entry, with the dead letter's history.
    const [newest] = await redis.client.xrevrange(HANDLED_STREAM, '+', '-', 'COUNT', 1);
    expect(newest![1]).toContain('dlq:redriven-from');
    await untilCell(HANDLED_STREAM, 'length', '4');
    await browser.page.waitForFunction((id) => !document.querySelector(`#detail tr[data-dead-letter="${id}"]`), DOM_TIMEOUT, deadLetterId);
    expect(await browser.page.$eval('#status', (node) => node.textContent)).toMatch(/^(1 redriven, 0 skipped|Updated )/);
    expect(app.logger.lines).toContain(`redrive dead letters: stream "${HANDLED_STREAM}", ids ["${deadLetterId}"]: 1 redriven, 0 skipped`);
  }, 40_000);

  it('renders a hostile stream, group, consumer and field name as text: no element, no script, no dialog', async () => {
    await seedStream(redis.client, HOSTILE, { entries: 2, pending: 0, deadLetters: 1, field: HOSTILE, value: HOSTILE });
    await redis.client.xgroup('CREATE', HOSTILE, HOSTILE, '0');
    await redis.client.xreadgroup('GROUP', HOSTILE, HOSTILE, 'COUNT', 1, 'STREAMS', HOSTILE, '>');
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, streams: [HOSTILE], refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(HOSTILE, 'pending', '1', HOSTILE);
    expect(await browser.page.evaluate(() => document.querySelectorAll('img').length)).toBe(0);
    await browser.page.$$eval('#streams [data-col="name"] button', (buttons, name) => buttons.find((button) => button.textContent === name)?.click(), HOSTILE);
    await browser.page.waitForSelector('#detail tr[data-dead-letter] pre', DOM_TIMEOUT);
    await browser.page.waitForSelector('#detail tr[data-consumer]', DOM_TIMEOUT);

    const rendered = await browser.page.evaluate(() => ({
      images: document.querySelectorAll('img').length,
      overview: document.querySelector('#streams')!.textContent,
      detail: document.querySelector('#detail')!.textContent,
      consumer: document.querySelector('#detail tr[data-consumer]')!.dataset.consumer,
      fields: document.querySelector('#detail tr[data-dead-letter] pre')!.textContent,
    }));
    expect(rendered.images).toBe(0);
    expect(rendered.overview).toContain(HOSTILE);
    expect(rendered.detail).toContain(`Stream ${HOSTILE}`);
    expect(rendered.detail).toContain(`Group ${HOSTILE}`);
    expect(rendered.consumer).toBe(HOSTILE);
    expect(rendered.fields).toContain(`${HOSTILE} = ${HOSTILE}-0`);
    // Named in the box too: still text.
    await browser.page.type('#stream-name', `${HOSTILE}-2`);
    await browser.page.keyboard.press('Enter');
    await browser.page.waitForFunction((name) => [...document.querySelectorAll('#streams tr')].some((row) => row.dataset.stream === name), DOM_TIMEOUT, `${HOSTILE}-2`);
    expect(await browser.page.evaluate(() => document.querySelectorAll('img').length)).toBe(0);
    expect(browser.dialogs).toEqual([]);
  }, 40_000);

  /**
   * Left edges of the characters of `selector`'s first text node from `from` on (spaces left
   * out), as Chromium lays them out; with `text`, of that text in a probe element added to the page.
   */
  function charLefts(selector: string, from: number, text?: string): Promise<number[]> {
    return browser.page.evaluate<[], () => number[]>(`(() => {
      let node = document.querySelector(${JSON.stringify(selector)});
      ${text === undefined ? '' : `node = document.createElement('div'); node.textContent = ${JSON.stringify(text)}; document.body.append(node);`}
      const textNode = [...node.childNodes].find((child) => child.nodeType === 3);
      const lefts = [];
      for (let i = ${from}; i < textNode.data.length; i++) {
        if (textNode.data[i] === ' ') continue;
        const range = document.createRange();
        range.setStart(textNode, i);
        range.setEnd(textNode, i + 1);
        lefts.push(range.getBoundingClientRect().left);
      }
      return lefts;
    })()`);
  }

  function leftToRight(lefts: readonly number[]): boolean {
    return lefts.length > 1 && lefts.every((left, i) => i === 0 || left > lefts[i - 1]!);
  }

  it('isolates names with a right-to-left override: the text after one reads in order, in the row and in the confirmation', async () => {
    const stream = 'bidi\u202Eorders';
    const group = 'grp\u202Ebilling';
    await redis.client.xadd(stream, '*', 'pattern', stream, 'data', '{}');
    await redis.client.xgroup('CREATE', stream, group, '0');
    await pauseGroup(redis.client, stream, group);
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, streams: [stream], refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    const badge = `#streams tr[data-group="${group}"] [data-col="group"] .paused`;
    await browser.page.waitForSelector(badge, DOM_TIMEOUT);
    // " paused" after the group's name, in its cell.
    expect(leftToRight(await charLefts(badge, 0))).toBe(true);
    expect(await overviewCell(stream, 'group', group)).toBe(`${group} paused`);

    await browser.page.locator(`#streams tr[data-stream="${stream}"] [data-col="name"] button`).click();
    await browser.page.waitForSelector('#detail button[data-action="resume"]', DOM_TIMEOUT);
    expect(leftToRight(await charLefts('#detail h3 .paused', 0))).toBe(true);
    await browser.page.locator('#detail button[data-action="resume"]').click();
    await waitFor(() => browser.dialogs.length === 1, 'the confirmation');
    const question = browser.dialogs[0]!.message;
    expect(question).toBe(`Resume group "\u2068${group}\u2069" on "\u2068${stream}\u2069"? Every worker reads it again within a second.`);
    // The question after the stream's name, as a dialog lays it out.
    expect(leftToRight(await charLefts('body', question.lastIndexOf('\u2069') + 1, question))).toBe(true);
    // Dismissed: still paused.
    expect(await redis.client.hexists(`{${stream}}:paused`, group)).toBe(1);
  }, 40_000);

  it('shows a dead letter cut to its first KiB, its whole value on demand, and bytes that are not UTF-8 as marked base64', async () => {
    const big = 'x'.repeat(1 << 20);
    const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x00]);
    await redis.client.xadd('raw', '*', 'pattern', 'raw', 'big', big, 'bytes', bytes);
    await redis.client.xgroup('CREATE', 'raw', AUDIT_GROUP, '0');
    const [[, [[id]]]] = (await redis.client.xreadgroup('GROUP', AUDIT_GROUP, 'audit-1', 'COUNT', 1, 'STREAMS', 'raw', '>')) as [string, [string, string[]][]][];
    const [deadLetterId] = (await seedDeadLetter('raw', id!)) as [string];
    const app = await dashboard.start({ streams: ['raw'], refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell('raw', 'dead-letters', '1');
    await browser.page.locator('#streams tr[data-stream="raw"] [data-col="name"] button').click();
    const fields = `#detail tr[data-dead-letter="${deadLetterId}"] pre`;
    await browser.page.waitForSelector(fields, DOM_TIMEOUT);
    const shown = await browser.page.$eval(fields, (node) => node.textContent);
    expect(shown).toBe(`pattern = raw\nbig = ${'x'.repeat(1024)} … (1.0 MiB in all)\nbytes = base64:Yf/+AA==`);
    expect(shown).not.toContain('\ufffd');

    await browser.page.locator(`#detail tr[data-dead-letter="${deadLetterId}"] button[data-action="whole"]`).click();
    await browser.page.waitForSelector('#entry:not([hidden]) pre', DOM_TIMEOUT);
    const whole = await browser.page.$$eval('#entry tbody tr', (rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    expect(whole).toEqual([['pattern', 'raw'], ['big', big], ['bytes', 'base64:Yf/+AA==']]);
  }, 40_000);

  it("keeps another site's page from reading dead letters through the operator's browser, even with the app's CORS open to every origin", async () => {
    await seedStream(redis.client, HANDLED_STREAM, { entries: 2, pending: 0, deadLetters: 1, value: 'card-4242' });
    for (const adapter of ['express', 'fastify'] as const) {
      const app = await dashboard.start({ guard: AllowOperators }, adapter, { cors: true });
      const target = `${app.page}/api/dead-letters?stream=${HANDLED_STREAM}`;
      // Another site (localhost is not the site of 127.0.0.1) whose script asks with the operator's cookies.
      const evil = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end(`<script>fetch(${JSON.stringify(target)}, { credentials: 'include' }).then((r) => r.text().then((t) => { document.title = r.status + ' ' + t; }), (e) => { document.title = 'failed ' + e; });</script>`);
      });
      await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
      try {
        await browser.page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`, { waitUntil: 'domcontentloaded' });
        await browser.page.waitForFunction(() => (document as unknown as { title: string }).title !== '', DOM_TIMEOUT);
        const title = await browser.page.title();
        expect(title, adapter).toMatch(/^403 /);
        expect(title).not.toContain('card-4242');
      } finally {
        evil.closeAllConnections();
        await new Promise((resolve) => evil.close(resolve));
      }
      // The operator's own page reads them.
      await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '1');
      await dashboard.close();
    }
  }, 60_000);

  it('pages the dead letters: the oldest 50, the next page from there (kept through refreshes), and back to the first', async () => {
    const ids = await seedStream(redis.client, HANDLED_STREAM, { entries: 60, pending: 0, deadLetters: 60 });
    const app = await dashboard.start({ refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(HANDLED_STREAM, 'dead-letters', '60');
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    const shownIds = () => browser.page.$$eval('#detail tr[data-dead-letter]', (rows) => rows.map((row) => row.dataset.deadLetter));
    await browser.page.waitForSelector('#detail p[data-list="dead-letters"] button[data-page="next"]', DOM_TIMEOUT);
    expect(await shownIds()).toEqual(ids.slice(0, 50));
    expect(await browser.page.$eval('#detail', (node) => node.textContent)).toContain('Dead letters (60 in all)');
    await browser.page.locator('#detail p[data-list="dead-letters"] button[data-page="next"]').click();
    await browser.page.waitForSelector('#detail p[data-list="dead-letters"] button[data-page="first"]', DOM_TIMEOUT);
    expect(await shownIds()).toEqual(ids.slice(50));
    // A refresh later, still the second page.
    const refreshed = await browser.page.$eval('body', (node) => node.dataset.refreshedAt);
    await browser.page.waitForFunction((before) => (document.querySelector('body') as unknown as { dataset: Record<string, string> }).dataset.refreshedAt !== before, DOM_TIMEOUT, refreshed);
    await browser.page.waitForFunction(() => document.querySelectorAll('#detail tr[data-dead-letter]').length === 10, DOM_TIMEOUT);
    await browser.page.locator('#detail p[data-list="dead-letters"] button[data-page="first"]').click();
    await browser.page.waitForFunction(() => document.querySelectorAll('#detail tr[data-dead-letter]').length === 50, DOM_TIMEOUT);
    expect(await shownIds()).toEqual(ids.slice(0, 50));
  }, 40_000);

  it('lists a delayed entry and a recurring schedule of a stream, and promotes the entry now after the confirmation', async () => {
    const client = new RedisStreamsClient({ connection: redis.server.url });
    try {
      await lastValueFrom(client.emit('later', new RedisStreamsRecord({ invoice: 42 }, { delay: 600_000 })));
      await new RedisStreamsScheduler(client).schedule('later', { report: 'hourly' }, { every: 'PT1H', key: 'hourly' });
    } finally {
      await client.close();
    }
    const [hold] = (await redis.client.zrange('{later}:delayed', 0, 0)) as [string];
    expect(hold).not.toBe('repeat:hourly');
    const dueAt = new Date(Number(await redis.client.zscore('{later}:delayed', hold))).toISOString();
    // No handler of the app reads "later": nothing promotes it but the page.
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500, streams: ['later'] });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell('later', 'delayed', '2');
    await browser.page.locator('#streams tr[data-stream="later"] [data-col="name"] button').click();
    const row = `#detail tr[data-hold="${hold}"]`;
    await browser.page.waitForSelector(row, DOM_TIMEOUT);
    await browser.page.waitForSelector('#detail tr[data-schedule="repeat:hourly"]', DOM_TIMEOUT);
    const cells = await browser.page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    expect(cells.slice(0, 4)).toEqual([hold, dueAt, 'once', 'pattern = later\ndata = {"invoice":42}']);
    expect(await browser.page.$eval('#detail tr[data-schedule="repeat:hourly"]', (node) => node.textContent)).toContain('every 1.0 h');
    expect(await browser.page.$eval('#detail', (node) => node.textContent)).toContain('Delayed entries (2 held)');
    mkdirSync(SCREENSHOTS, { recursive: true });
    await browser.page.screenshot({ path: `${SCREENSHOTS}/delayed.png`, fullPage: true });

    browser.answer = true;
    await browser.page.locator(`${row} button[data-action="promote"]`).click();
    await waitFor(() => browser.dialogs.length === 1, 'the confirmation');
    expect(browser.dialogs[0]).toEqual({ type: 'confirm', message: `Promote delayed entry \u2068${hold}\u2069 of "\u2068later\u2069" now? It is added to the stream at once, with the entries already due.` });
    await untilCell('later', 'length', '1');
    await browser.page.waitForFunction((selector) => !document.querySelector(selector), DOM_TIMEOUT, row);
    const [[, fields]] = (await redis.client.xrange('later', '-', '+')) as [[string, string[]]];
    expect(fields).toEqual(['pattern', 'later', 'data', '{"invoice":42}']);
    expect(await redis.client.zrange('{later}:delayed', 0, -1)).toEqual(['repeat:hourly']);
    expect(app.logger.lines).toContain(`promote delayed entry: stream "later", hold "${hold}": promoted, 1 in all`);
  }, 40_000);

  it('works the same on Fastify: the page, its counts, and a purge from the page', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 4, pending: 1, deadLetters: 1 });
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, refreshInterval: 500 }, 'fastify');
    const response = await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await untilCell(HANDLED_STREAM, 'length', '4');
    await untilCell(HANDLED_STREAM, 'pending', '1', AUDIT_GROUP);
    await untilCell(HANDLED_STREAM, 'dead-letters', '1');

    browser.answer = true;
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    const buttons = `#detail tr[data-dead-letter="${deadLetterId}"] button`;
    await browser.page.waitForSelector(buttons, DOM_TIMEOUT);
    await browser.page.$$eval(buttons, (all) => all.find((button) => button.textContent === 'Purge')?.click());
    await untilCell(HANDLED_STREAM, 'dead-letters', '0');
    expect(browser.dialogs).toEqual([{ type: 'confirm', message: `Delete dead letter ${deadLetterId} of "\u2068${HANDLED_STREAM}\u2069" for good?` }]);
    expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
    expect(await redis.client.xlen(HANDLED_STREAM)).toBe(4);
  }, 40_000);

  it('read-only: no action buttons on the page', async () => {
    await seedStream(redis.client, HANDLED_STREAM, { entries: 2, pending: 1, deadLetters: 1 });
    const app = await dashboard.start({ refreshInterval: 500 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(HANDLED_STREAM, 'dead-letters', '1');
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    await browser.page.waitForSelector('#detail tr[data-dead-letter]', DOM_TIMEOUT);
    await browser.page.waitForSelector('#detail tr[data-id]', DOM_TIMEOUT);
    expect(await browser.page.$eval('#mode', (node) => node.textContent)).toBe('read-only');
    const labels = await browser.page.$$eval('#detail button', (buttons) => buttons.map((button) => button.textContent));
    expect(labels.filter((label) => /Redrive|Purge|Ack|Claim|Delete/.test(label ?? ''))).toEqual([]);

    // Inspecting an entry is a read: its fields show as text.
    await browser.page.locator('#detail tr[data-id] button').click();
    await browser.page.waitForSelector('#entry:not([hidden]) pre', DOM_TIMEOUT);
    expect(await browser.page.$$eval('#entry pre', (nodes) => nodes.map((node) => node.textContent))).toContain('{\n  "n": 1\n}');
  }, 40_000);

  /** Two replicas of the app on one Redis (no csrfSecret given), the page through a round-robin proxy. */
  async function behindProxy(dashboards: Parameters<typeof startDashboardApp>[1][], body: (proxy: RoundRobinProxy, replicas: DashboardApp[]) => Promise<void>): Promise<void> {
    const replicas: DashboardApp[] = [];
    let proxy: RoundRobinProxy | undefined;
    try {
      for (const dashboard of dashboards) replicas.push(await startDashboardApp(redis.server.url, dashboard));
      proxy = await RoundRobinProxy.start(replicas.map((replica) => replica.origin));
      await body(proxy, replicas);
    } finally {
      await proxy?.close();
      for (const replica of replicas) await replica.close();
    }
  }

  async function purgeFromPage(deadLetterId: string): Promise<void> {
    const buttons = `#detail tr[data-dead-letter="${deadLetterId}"] button`;
    await browser.page.waitForSelector(buttons, DOM_TIMEOUT);
    await browser.page.$$eval(buttons, (all) => all.find((button) => button.textContent === 'Purge')?.click());
    await browser.page.waitForFunction((id) => !document.querySelector(`#detail tr[data-dead-letter="${id}"]`), DOM_TIMEOUT, deadLetterId);
  }

  it('acts through two replicas behind a load balancer without sticky sessions: the token of one is taken by the other', async () => {
    const deadLetterIds = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 0, deadLetters: 2 });
    const options = { readOnly: false, guard: AllowOperators, refreshInterval: 500 };
    await behindProxy([options, options], async (proxy) => {
      browser.answer = true;
      await browser.page.goto(`${proxy.origin}/streams`, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '2');
      await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
      for (const id of deadLetterIds) await purgeFromPage(id);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
      // One purge each: one of them reached the replica that did not hand out the page's token.
      expect(proxy.seen.map((requests) => requests.filter((one) => one.startsWith('POST')))).toEqual([['POST /streams/api/dead-letters/purge'], ['POST /streams/api/dead-letters/purge']]);
      expect(await browser.page.$eval('#status', (node) => node.textContent)).not.toMatch(/CSRF|refused/);
    });
  }, 40_000);

  it('fetches a new CSRF token once when a mutation is refused for it, and the action goes through', async () => {
    const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 0, deadLetters: 1 });
    const withSecret = (csrfSecret: string) => ({ readOnly: false, guard: AllowOperators, refreshInterval: 500, csrfSecret });
    await behindProxy([withSecret('a'.repeat(32)), withSecret('b'.repeat(32))], async (proxy, [first, second]) => {
      browser.answer = true;
      proxy.upstreams = [first!.origin];
      await browser.page.goto(`${proxy.origin}/streams`, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '1');
      await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
      await browser.page.waitForSelector(`#detail tr[data-dead-letter="${deadLetterId}"]`, DOM_TIMEOUT);
      // The app is redeployed with another secret: the page's token is not taken any more.
      proxy.upstreams = [second!.origin];
      await purgeFromPage(deadLetterId!);
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
      expect(second!.logger.lines).toContain('refused "/streams/api/dead-letters/purge": missing, wrong or expired CSRF token');
      expect(second!.logger.lines.filter((line) => line.startsWith('purge dead letters'))).toEqual([`purge dead letters: stream "${HANDLED_STREAM}", ids ["${deadLetterId}"]: 1 purged, 0 not found, 0 skipped`]);
    });
  }, 40_000);

  it('writes docs/images/dashboard.png when DASHBOARD_SCREENSHOT is set', async () => {
    if (process.env.DASHBOARD_SCREENSHOT === undefined) return;
    await seedStream(redis.client, HANDLED_STREAM, { entries: 40, pending: 4, deadLetters: 2 });
    await redis.client.set('{payments}:partitions', '2');
    await seedStream(redis.client, 'payments:p0', { entries: 12, pending: 1, deadLetters: 1 });
    await seedStream(redis.client, 'payments:p1', { entries: 9, pending: 0, deadLetters: 0 });
    const app = await dashboard.start({ readOnly: false, guard: AllowOperators, streams: ['payments'], refreshInterval: 500 });
    await browser.page.setViewport({ width: 1000, height: 720 });
    await browser.page.goto(app.page, { waitUntil: 'domcontentloaded' });
    await untilCell(HANDLED_STREAM, 'dead-letters', '2');
    await browser.page.locator(`#streams tr[data-stream="${HANDLED_STREAM}"] [data-col="name"] button`).click();
    await browser.page.waitForSelector('#detail tr[data-dead-letter]', DOM_TIMEOUT);
    mkdirSync('docs/images', { recursive: true });
    await browser.page.screenshot({ path: 'docs/images/dashboard.png', fullPage: false });
  }, 40_000);
});
