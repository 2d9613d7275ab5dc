/// <reference lib="dom" />
// The callbacks given to page.$$eval and page.evaluate run in the browser, on its DOM.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eachIsoDate, shiftIsoDate, todayIn, weekdayOf } from '../../src/dates/report-date.js';
import type { ReportLoadsRow } from '../../src/warehouse/engine/warehouse-schema.js';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { launchChromium } from '../helpers/headless-chromium.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * What an operator sees on opening the dashboard after a backfill: healthy data reads as healthy
 * at every zoom (`loaded` and `no_data` are both complete), a failure still shows, the date axis
 * is legible at any width, and the page opens on recent nights rather than on the oldest date the
 * ledger holds. The ledger: all of 2024 backfilled (weekdays loaded, weekends no data, one failed
 * day), nothing in between, and the last fortnight of nights.
 */

const SCREENSHOTS = new URL('../output/', import.meta.url).pathname;
const PORTFOLIOS = [1001, 1002, 1003];
const TYPES = ['constituent.close', 'index'] as const;
const FAILED = { portfolioId: 1002, reportType: 'index', date: '2024-03-13' } as const;
/** A loaded day whose file missed a check set to warn: loaded, and marked as such. */
const WARNED = { portfolioId: 1003, reportType: 'constituent.close', date: '2024-03-20' } as const;
/** Loaded and failed as the page's stylesheet colours them (--loaded, --failed). */
const GREEN = 'rgb(46, 157, 75)';
const RED = 'rgb(212, 60, 60)';

const yesterday = shiftIsoDate(todayIn('UTC'), -1);
const RECENT_FROM = shiftIsoDate(yesterday, -13);

const isWeekend = (date: string) => [0, 6].includes(weekdayOf(date));

function seedRows(): ReportLoadsRow[] {
  const rows: ReportLoadsRow[] = [];
  for (const portfolioId of PORTFOLIOS) {
    for (const reportType of TYPES) {
      for (const date of [...eachIsoDate('2024-01-01', '2024-12-31'), ...eachIsoDate(RECENT_FROM, yesterday)]) {
        const failed = portfolioId === FAILED.portfolioId && reportType === FAILED.reportType && date === FAILED.date;
        rows.push(ledgerRow(portfolioId, reportType, date, failed ? 'failed' : isWeekend(date) ? 'no_data' : 'loaded'));
      }
    }
  }
  return rows;
}

/** Each cell of the page as `portfolio type from → [outcome, background colour]`. */
async function cellsOnPage(page: Page): Promise<Map<string, readonly [string, string]>> {
  const cells = await page.$$eval('.grid-row', (rows) =>
    rows.flatMap((row) =>
      Array.from(row.querySelectorAll<HTMLElement>('.cell')).map(
        (cell) =>
          [
            `${(row as HTMLElement).dataset.portfolio} ${(row as HTMLElement).dataset.reportType} ${cell.dataset.from}`,
            [cell.dataset.outcome ?? '', getComputedStyle(cell).backgroundColor] as const,
          ] as const,
      ),
    ),
  );
  return new Map(cells);
}

/** The axis labels' boxes as the browser laid them out, left to right. */
async function axisLabels(page: Page): Promise<{ text: string; left: number; right: number }[]> {
  const labels = await page.$$eval('#axis span', (spans) =>
    spans.map((span) => {
      const box = span.getBoundingClientRect();
      return { text: span.textContent ?? '', left: box.left, right: box.right };
    }),
  );
  return labels.sort((a, b) => a.left - b.left);
}

describe('the dashboard shows healthy data as healthy, legibly, from recent nights', () => {
  let seeded: SeededWarehouse;
  let browser: Browser;
  let dashboard: CliProcess;
  let url: string;

  beforeAll(async () => {
    seeded = await seededWarehouse('sqlite', seedRows());
    await seeded.warehouse.db
      .insertInto('slice_checks')
      .values({
        portfolio_id: WARNED.portfolioId,
        report_type: WARNED.reportType,
        report_date: WARNED.date,
        check_name: 'weightsSum',
        severity: 'warn',
        outcome: 'warn',
        measured: 1.4,
        threshold: 0.001,
        message: 'the weights (index_weighting) of 11 rows sum to 1.4, 40% away from 1',
        checked_at: '2026-11-25T00:00:00.000Z',
      })
      .execute();
    const configFile = join(seeded.dir, 'settings.json');
    writeFileSync(configFile, JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: TYPES, schedule: { timeZone: 'UTC' } }));
    dashboard = startCliProcess(['dashboard', '--port', '0', '--config', configFile], { cwd: seeded.dir, env: seeded.env });
    await until(
      () => /at (http:\/\/\S+)/.test(dashboard.stdout()),
      15_000,
      () => `the dashboard to listen (output so far: ${dashboard.output()})`,
    );
    url = /at (http:\/\/\S+)/.exec(dashboard.stdout())![1]!;
    browser = await launchChromium();
    mkdirSync(SCREENSHOTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    dashboard?.child.kill('SIGTERM');
    expect(await dashboard?.exited).toBe(0);
    await seeded?.close();
  });

  it('a month of loaded weekdays and no-data weekends is green by day, week and month; a failed day shows at every zoom', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      const zooms = [
        { period: 'day', from: '2024-03-01', to: '2024-03-31', cells: 31, failedCell: '2024-03-13' },
        { period: 'week', from: '2024-03-01', to: '2024-03-31', cells: 5, failedCell: '2024-03-11' },
        { period: 'month', from: '2024-03-01', to: '2024-03-31', cells: 1, failedCell: '2024-03-01' },
        { period: 'week', from: '2024-01-01', to: '2024-12-31', cells: 53, failedCell: '2024-03-11' },
        { period: 'month', from: '2024-01-01', to: '2024-12-31', cells: 12, failedCell: '2024-03-01' },
      ] as const;
      for (const zoom of zooms) {
        await page.goto(`${url}?from=${zoom.from}&to=${zoom.to}&period=${zoom.period}`);
        await page.waitForSelector('.grid-row');
        const cells = await cellsOnPage(page);
        expect(cells.size, `${zoom.period} ${zoom.from}`).toBe(PORTFOLIOS.length * TYPES.length * zoom.cells);
        for (const [key, [outcome, colour]] of cells) {
          const [portfolioId, reportType, from] = key.split(' ');
          const failed = Number(portfolioId) === FAILED.portfolioId && reportType === FAILED.reportType && from === zoom.failedCell;
          if (failed) {
            expect([outcome, colour], key).toEqual(['failed', RED]);
          } else if (zoom.period === 'day' && isWeekend(from!)) {
            expect(outcome, key).toBe('no_data');
          } else {
            expect([outcome, colour], `${zoom.period} ${key}`).toEqual(['loaded', GREEN]);
          }
        }
        if (zoom.from === '2024-03-01') await page.screenshot({ path: join(SCREENSHOTS, `dashboard-march-by-${zoom.period}.png`), fullPage: true });
      }
      // Loaded with warnings stays green, with an amber corner, at every zoom; the legend counts it.
      for (const [period, cellFrom] of [
        ['day', WARNED.date],
        ['week', '2024-03-18'],
        ['month', '2024-03-01'],
      ] as const) {
        await page.goto(`${url}?from=2024-03-01&to=2024-03-31&period=${period}`);
        const warned = page.locator(`.grid-row[data-portfolio="${WARNED.portfolioId}"][data-report-type="${WARNED.reportType}"] .cell[data-from="${cellFrom}"]`);
        expect(await warned.getAttribute('class'), period).toContain('warned');
        expect(await warned.evaluate((cell) => [cell.dataset.outcome, getComputedStyle(cell).backgroundColor, getComputedStyle(cell).backgroundImage])).toEqual([
          'loaded',
          GREEN,
          expect.stringContaining('linear-gradient'),
        ]);
        expect(await page.locator('.cell.warned').count(), period).toBe(1);
        expect(await page.textContent('#legend')).toContain('of which with warnings 1');
        await warned.hover();
        await expect.poll(() => page.textContent('#tooltip')).toContain(period === 'day' ? 'loaded with warnings' : 'of which with warnings 1');
      }
      await page.goto(`${url}?from=2024-03-01&to=2024-03-31&period=week`);
      await page.waitForSelector('.grid-row');
      await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-march-warned-by-week.png'), fullPage: true });
      expect(await page.textContent('#failures h2')).toBe('Failures by error code and portfolio (1 slice)');

      // The week's tooltip still counts its days apart.
      await page.goto(`${url}?from=2024-03-01&to=2024-03-31&period=week`);
      await page.locator('.grid-row[data-portfolio="1001"][data-report-type="index"] .cell[data-from="2024-03-04"]').hover();
      await expect.poll(() => page.textContent('#tooltip')).toContain('no data 2, loaded 5');
    } finally {
      await page.close();
    }
  });

  it('labels the date axis only where labels fit: no two overlap, at any width and zoom', async () => {
    const ranges = [
      `from=2024-01-01&period=week`, // the whole ledger by week: the smear this replaces
      `from=2024-01-01&period=day`,
      `from=2024-01-01&period=month`,
      `from=2024-01-01`, // the period that fits the page
      `from=2024-01-01&to=2024-12-31&period=week`,
      `from=2024-02-10&to=2024-06-30&period=day`,
      '', // the default range
    ];
    const figures: string[] = [];
    for (const width of [640, 1024, 1400, 1920, 2560]) {
      const page = await browser.newPage({ viewport: { width, height: 700 } });
      try {
        for (const range of ranges) {
          await page.goto(`${url}?${range}`);
          await page.waitForSelector('.grid-row');
          const labels = await axisLabels(page);
          const where = `${width}px ?${range}: ${labels.map((label) => label.text).join(' ')}`;
          // Each range spans months: the axis names some of them.
          expect(labels.length, where).toBeGreaterThanOrEqual(2);
          for (let k = 1; k < labels.length; k += 1) expect(labels[k]!.left, where).toBeGreaterThanOrEqual(labels[k - 1]!.right);
          if (range === 'from=2024-01-01&period=week') {
            figures.push(`${width}px: ${labels.length} labels over ${await page.$$eval('.grid-row:first-child .cell', (cells) => cells.length)} weeks`);
            if (width === 1400 || width === 640) await page.screenshot({ path: join(SCREENSHOTS, `dashboard-axis-by-week-${width}.png`) });
          }
        }
      } finally {
        await page.close();
      }
    }
    console.log(`the whole ledger by week: ${figures.join('; ')}`);
  }, 120_000);

  it('opens on a recent window, not the oldest date the ledger holds; the whole ledger is one click away', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      await page.goto(url);
      await page.waitForSelector('.grid-row');
      const from = await page.inputValue('#filters input[name="from"]');
      expect(await page.inputValue('#filters input[name="to"]')).toBe(yesterday);
      expect(from).toBe(shiftIsoDate(yesterday, -89));
      expect(await page.textContent('#range')).toContain('one cell per day');
      const cells = await cellsOnPage(page);
      expect(cells.size).toBe(PORTFOLIOS.length * TYPES.length * 90);
      // The recent nights read as what they are; the days before them, never attempted, as missing.
      for (const [key, [outcome]] of cells) {
        const date = key.split(' ')[2]!;
        expect(outcome, key).toBe(date < RECENT_FROM ? 'missing' : isWeekend(date) ? 'no_data' : 'loaded');
      }
      expect(await page.getAttribute('#ranges a[aria-current]', 'data-from')).toBe(from);
      await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-default-range.png'), fullPage: true });

      // One click to everything the ledger holds, which a shared link carries as one parameter.
      await page.click(`#ranges a[data-from="2024-01-01"]`);
      await page.waitForURL(/from=2024-01-01/);
      expect(new URL(page.url()).search).toBe('?from=2024-01-01');
      await expect.poll(() => page.inputValue('#filters input[name="from"]')).toBe('2024-01-01');
      expect(await page.inputValue('#filters input[name="to"]')).toBe(yesterday);
      await expect.poll(() => page.getAttribute('.grid-row:first-child .cell:first-child', 'data-from')).toBe('2024-01-01');
      expect(await page.textContent('#ranges')).toContain(`all the ledger holds (2024-01-01 to ${yesterday})`);
      await page.screenshot({ path: join(SCREENSHOTS, 'dashboard-whole-ledger.png'), fullPage: true });

      // And a year back from where the grid ends.
      await page.click('#ranges a:text("1 year")');
      await page.waitForURL(new RegExp(`from=${shiftIsoDate(yesterday, -364)}`));
      await expect.poll(() => page.inputValue('#filters input[name="from"]')).toBe(shiftIsoDate(yesterday, -364));
    } finally {
      await page.close();
    }
  });
});
