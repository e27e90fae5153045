import { Injectable, type CanActivate } from '@nestjs/common';
import { existsSync, mkdirSync } from 'node:fs';
import puppeteer, { type Browser, type Dialog, type Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deadLetterKey } from '../../src/redis/keys.js';
import { HANDLED_STREAM, seedStream, startDashboardApp, type DashboardApp } from '../helpers/dashboard-app.js';
import { ADAPTERS } from '../helpers/dashboard-http.js';
import { useRedisServer } from '../helpers/use-redis-server.js';

/** Debian's chromium; puppeteer-core downloads no browser. */
const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = 'build/dashboard-screenshots';
const DOM_TIMEOUT = { timeout: 15_000 };

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

@Injectable()
class AllowOperators implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

describe.skipIf(!existsSync(CHROMIUM))('dashboard permissions, find and bulk actions in headless Chromium', () => {
  const redis = useRedisServer();
  let browser: Browser | undefined;
  let app: DashboardApp | undefined;
  let page: Page;
  let dialogs: { type: string; message: string }[];
  let acceptDialogs = false;

  beforeAll(async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--headless=new'], timeout: 30_000 });
  }, 40_000);

  afterAll(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    dialogs = [];
    acceptDialogs = false;
    page = await browser!.newPage();
    page.setDefaultTimeout(15_000);
    await page.setViewport({ width: 1200, height: 800 });
    page.on('dialog', (dialog: Dialog) => {
      dialogs.push({ type: dialog.type(), message: dialog.message() });
      void (acceptDialogs ? dialog.accept() : dialog.dismiss());
    });
  });

  afterEach(async (context) => {
    if (context.task.result?.state === 'fail') {
      mkdirSync(SCREENSHOTS, { recursive: true });
      const shot = page.screenshot({ path: `${SCREENSHOTS}/${context.task.name.replace(/[^\w-]+/g, '-').slice(0, 80)}.png`, fullPage: true }).catch(() => undefined);
      await Promise.race([shot, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    }
    await page.close();
    await app?.close();
    app = undefined;
    await redis.client.flushall();
  });

  async function untilCell(stream: string, col: string, expected: string): Promise<void> {
    await page.waitForFunction(
      (stream, col, expected) => [...document.querySelectorAll('#streams tbody tr')].find((one) => one.dataset.stream === stream)?.querySelector(`[data-col="${col}"]`)?.textContent === expected,
      DOM_TIMEOUT,
      stream,
      col,
      expected,
    );
  }

  async function openStream(stream: string): Promise<void> {
    await page.locator(`#streams tr[data-stream="${stream}"] [data-col="name"] button`).click();
  }

  const buttonLabels = (selector: string) => page.$$eval(selector, (buttons) => buttons.map((button) => button.textContent));

  for (const adapter of ADAPTERS) {
    it(`${adapter}: offers only the action kinds the actions option allows`, async () => {
      const [deadLetterId] = await seedStream(redis.client, HANDLED_STREAM, { entries: 3, pending: 1, deadLetters: 1 });
      app = await startDashboardApp(redis.server.url, { readOnly: false, guard: AllowOperators, refreshInterval: 500, actions: ['redrive'] }, adapter);
      await page.goto(app.page, { waitUntil: 'domcontentloaded' });
      await untilCell(HANDLED_STREAM, 'dead-letters', '1');
      expect(await page.$eval('#mode', (node) => node.textContent)).toBe('actions: redrive');
      await openStream(HANDLED_STREAM);
      await page.waitForSelector(`#detail tr[data-dead-letter="${deadLetterId}"]`, DOM_TIMEOUT);
      await page.waitForSelector('#detail tr[data-id]', DOM_TIMEOUT);
      const labels = await buttonLabels('#detail button');
      expect(labels).toEqual(expect.arrayContaining(['Redrive selected', 'Redrive all', 'Redrive']));
      expect(labels.filter((label) => /Purge|Ack|Claim|Delete|Pause|Promote|Remove/.test(label ?? ''))).toEqual([]);

      acceptDialogs = true;
      await page.$$eval(`#detail tr[data-dead-letter="${deadLetterId}"] button`, (buttons) => buttons.find((button) => button.textContent === 'Redrive')?.click());
      await untilCell(HANDLED_STREAM, 'dead-letters', '0');
      expect(await redis.client.xlen(deadLetterKey(HANDLED_STREAM))).toBe(0);
      expect(dialogs).toHaveLength(1);
    }, 40_000);
  }
});
