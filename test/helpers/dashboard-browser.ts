import { existsSync, mkdirSync } from 'node:fs';
import puppeteer, { type Browser, type Dialog, type Page } from 'puppeteer-core';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** Debian's chromium (.ci/run installs it); puppeteer-core downloads no browser. */
export const CHROMIUM = '/usr/bin/chromium';
/** Whether the browser specs can run here; they are skipped (with a warning) where it is missing. */
export const HAS_CHROMIUM = existsSync(CHROMIUM);
/** Where a failing browser test leaves the page as it was: `<name of the test>.png`. */
export const SCREENSHOTS = 'build/dashboard-screenshots';
/** The bound of the specs' DOM waits (page.waitForSelector / waitForFunction). */
export const DOM_TIMEOUT = { timeout: 15_000 };

if (!HAS_CHROMIUM) console.warn(`${CHROMIUM} is missing (apt-get install chromium): the dashboard's browser tests are skipped`);

/**
 * How the page's dialogs are answered: false dismisses them, true accepts them, a string accepts
 * them with that text (what a prompt() returns; a confirm() is accepted).
 */
export type DialogAnswer = boolean | string;

export interface DashboardBrowser {
  /** A fresh tab for each test (closed after it). */
  readonly page: Page;
  /** Every dialog the page opened in this test (confirm() of an action, prompt(), or alert() of an injected script). */
  readonly dialogs: readonly { type: string; message: string }[];
  /** How the dialogs are answered from now on in this test; back to the option's value before each test. */
  answer: DialogAnswer;
}

export interface DashboardBrowserOptions {
  /** How dialogs are answered unless a test says otherwise (default false: dismissed). */
  answer?: DialogAnswer;
  /** The tab's viewport (default 1200×800). */
  viewport?: { width: number; height: number };
}

/** Headless Chromium, started once for the calling file. */
export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--headless=new'], timeout: 30_000 });
}

/**
 * One headless Chromium for a describe block (launched in beforeAll, closed in afterAll) and a new
 * tab in each test that records and answers its dialogs. After a failing test the tab's screenshot
 * goes to build/dashboard-screenshots/.
 *
 * Call it after registering the block's own afterEach that closes the app under test: vitest runs
 * after-hooks last-registered first, so the screenshot shows the page while its app still answers,
 * and the tab closes before the app.
 */
export function useDashboardBrowser({ answer = false, viewport = { width: 1200, height: 800 } }: DashboardBrowserOptions = {}): DashboardBrowser {
  let browser: Browser | undefined;
  let page: Page | undefined;
  let dialogs: { type: string; message: string }[] = [];
  let current: DialogAnswer = answer;

  beforeAll(async () => {
    browser = await launchChromium();
  }, 40_000);

  afterAll(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    dialogs = [];
    current = answer;
    page = await browser!.newPage();
    // The tab in front: a background tab's animation frames, which puppeteer's waits and locators poll on, may not come.
    await page.bringToFront();
    page.setDefaultTimeout(DOM_TIMEOUT.timeout);
    await page.setViewport(viewport);
    page.on('dialog', (dialog: Dialog) => {
      dialogs.push({ type: dialog.type(), message: dialog.message() });
      void (current === false ? dialog.dismiss() : dialog.accept(current === true ? undefined : current));
    });
  });

  afterEach(async (context) => {
    if (page === undefined) return;
    if (context.task.result?.state === 'fail') {
      mkdirSync(SCREENSHOTS, { recursive: true });
      const shot = page.screenshot({ path: `${SCREENSHOTS}/${screenshotName(context.task.name)}.png`, fullPage: true }).catch(() => undefined);
      // A hung page must not hold up the clean-up.
      await Promise.race([shot, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    }
    await page.close();
    page = undefined;
  });

  return {
    get page() {
      if (page === undefined) throw new Error('useDashboardBrowser: the page opens in beforeEach');
      return page;
    },
    get dialogs() {
      return dialogs;
    },
    get answer() {
      return current;
    },
    set answer(value: DialogAnswer) {
      current = value;
    },
  };
}

function screenshotName(test: string): string {
  return test.replace(/[^\w-]+/g, '-').slice(0, 80);
}

/** The page's DOM as untilOverviewCell uses it: the callback runs in Chromium, and the tests compile without lib "dom". */
interface OverviewRow {
  readonly textContent: string | null;
  readonly dataset: Record<string, string | undefined>;
  querySelector(selector: string): OverviewRow | null;
}
declare const document: { querySelectorAll(selector: string): Iterable<OverviewRow> };

/** Waits until the overview's cell `col` in the row of `stream` (and `group`, where given) reads `expected`. */
export async function untilOverviewCell(page: Page, stream: string, col: string, expected: string, group?: string): Promise<void> {
  await page.waitForFunction(
    (stream, col, expected, group) => {
      const row = [...document.querySelectorAll('#streams tbody tr')].find((one) => one.dataset.stream === stream && (group === undefined || one.dataset.group === group));
      return row?.querySelector(`[data-col="${col}"]`)?.textContent === expected;
    },
    DOM_TIMEOUT,
    stream,
    col,
    expected,
    group,
  );
}
