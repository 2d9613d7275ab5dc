/// <reference lib="dom" />
// The callbacks given to page.$$eval run in the browser, on its DOM.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sliceJobId } from '../../src/queue/slice-job.js';
import { eachIsoDate, weekdayOf } from '../../src/dates/report-date.js';
import type { ReportLoadsRow, SliceStatus } from '../../src/warehouse/engine/warehouse-schema.js';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { launchChromium } from '../helpers/headless-chromium.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { TEST_REDIS_URL, testPrefix } from '../helpers/test-redis.js';
import { until } from '../helpers/until.js';

/*
 * The dashboard as an operator sees it: the real `report-sync dashboard` process, a seeded ledger,
 * and Debian's Chromium. The grid is compared cell by cell with the ledger; hovering, clicking,
 * filtering and drilling down are done with the mouse, and the URL is checked to carry the filters.
 */

const SCREENSHOTS = new URL('../output/', import.meta.url).pathname;
const PORTFOLIOS = [1001, 1002, 1003];
const TYPES = ['constituent.close', 'index'] as const;

/** What March 2024 holds: weekends no data, a forbidden week, one bad file, three days never attempted. */
function expectedOutcome(portfolioId: number, reportType: string, date: string): SliceStatus | 'missing' {
  if (portfolioId === 1001 && reportType === 'index' && date >= '2024-03-25' && date <= '2024-03-27') return 'missing';
  if (weekdayOf(date) >= 6) return 'no_data';
  if (portfolioId === 1003 && reportType === 'index' && date >= '2024-03-11' && date <= '2024-03-15') return 'failed';
  if (portfolioId === 1002 && reportType === 'constituent.close' && date === '2024-03-20') return 'failed';
  return 'loaded';
}

function seedRows(): ReportLoadsRow[] {
  const rows: ReportLoadsRow[] = [];
  for (const portfolioId of PORTFOLIOS) {
    for (const reportType of TYPES) {
      for (const date of eachIsoDate('2024-03-01', '2024-03-31')) {
        const outcome = expectedOutcome(portfolioId, reportType, date);
        if (outcome === 'missing') continue;
        const error =
          outcome !== 'failed'
            ? undefined
            : portfolioId === 1003
              ? 'EXPORT_FORBIDDEN: 403 for portfolio 1003: check its entitlements'
              : 'FILE_INVALID: line 7, column Closing Price: "12,5" is not a decimal';
        const row = ledgerRow(portfolioId, reportType, date, outcome, { error, at: '2024-04-01T02:00:00.000Z' });
        rows.push({
          ...row,
          file_name: `${portfolioId}_${reportType}_${date}.csv`,
          content_sha256: 'ab'.repeat(32),
          bytes: 4096,
          attempts: outcome === 'failed' ? 5 : 1,
          first_loaded_at: outcome === 'loaded' ? '2024-04-01T02:00:00.000Z' : null,
          load_id: outcome === 'loaded' ? `00000000-0000-4000-8${TYPES.indexOf(reportType)}00-${portfolioId}${date.replaceAll('-', '')}` : null,
          loaded_at: outcome === 'loaded' ? '2024-04-01T02:00:00.000Z' : null,
        });
      }
    }
  }
  // A year of history for one pair, with one failure in June: the month view drills down to it.
  for (const date of eachIsoDate('2023-01-01', '2023-12-31')) {
    rows.push(ledgerRow(1001, 'index', date, date === '2023-06-14' ? 'failed' : 'loaded', { error: 'EXPORT_UNAVAILABLE: 503 after 5 attempts', at: '2024-01-02T02:00:00.000Z' }));
  }
  return rows;
}

interface Dashboard {
  readonly process: CliProcess;
  readonly url: string;
  close(): Promise<void>;
}

async function startDashboard(seeded: SeededWarehouse, configFile: string, env: Record<string, string> = {}): Promise<Dashboard> {
  const process = startCliProcess(['dashboard', '--port', '0', '--config', configFile], { cwd: seeded.dir, env: { ...seeded.env, ...env } });
  await until(
    () => /at (http:\/\/\S+)/.test(process.stdout()),
    15_000,
    () => `the dashboard to listen (output so far: ${process.output()})`,
  );
  const url = /at (http:\/\/\S+)/.exec(process.stdout())![1]!;
  return {
    process,
    url,
    async close() {
      process.child.kill('SIGTERM');
      expect(await process.exited).toBe(0);
    },
  };
}

/** Every cell of the grid as `portfolio type date → outcome`, read from the page. */
async function gridOnPage(page: Page): Promise<Map<string, string>> {
  const cells = await page.$$eval('.grid-row', (rows) =>
    rows.flatMap((row) =>
      Array.from(row.querySelectorAll<HTMLElement>('.cell')).map(
        (cell) => [`${(row as HTMLElement).dataset.portfolio} ${(row as HTMLElement).dataset.reportType} ${cell.dataset.from}`, cell.dataset.outcome ?? ''] as const,
      ),
    ),
  );
  return new Map(cells);
}

/** A page on March 2024's grid, recording every request that leaves the dashboard's origin. */
async function openMarch(browser: Browser, dashboard: Dashboard): Promise<{ page: Page; foreign: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const foreign: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(dashboard.url)) foreign.push(request.url());
  });
  await page.goto(`${dashboard.url}?from=2024-03-01&to=2024-03-31`);
  await page.waitForSelector('.grid-row');
  return { page, foreign };
}

describe('the coverage dashboard in a real browser', () => {
  let seeded: SeededWarehouse;
  let browser: Browser;
  let configFile: string;

  beforeAll(async () => {
    seeded = await seededWarehouse('sqlite', seedRows());
    configFile = join(seeded.dir, 'settings.json');
    writeFileSync(configFile, JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: ['index', 'constituent.close'] }));
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await seeded?.close();
  });

  it('draws the ledger cell by cell; hover, click, filter (in the URL), failures grouped, a screenshot', async () => {
    const dashboard = await startDashboard(seeded, configFile);
    const { page, foreign } = await openMarch(browser, dashboard);
    try {
      // Every cell, compared with what was seeded.
      const grid = await gridOnPage(page);
      expect(grid.size).toBe(PORTFOLIOS.length * TYPES.length * 31);
      for (const portfolioId of PORTFOLIOS) {
        for (const reportType of TYPES) {
          for (const date of eachIsoDate('2024-03-01', '2024-03-31')) {
            expect(grid.get(`${portfolioId} ${reportType} ${date}`), `${portfolioId} ${reportType} ${date}`).toBe(expectedOutcome(portfolioId, reportType, date));
          }
        }
      }
      await expect.poll(() => page.textContent('#legend')).toContain('failed 6');
      expect(await page.textContent('#legend')).toContain('missing 3');

      // Hover: the cell says what it is.
      const forbidden = page.locator('.grid-row[data-portfolio="1003"][data-report-type="index"] .cell[data-from="2024-03-12"]');
      await forbidden.hover();
      await expect.poll(() => page.textContent('#tooltip')).toContain('1003 index  2024-03-12');
      expect(await page.textContent('#tooltip')).toContain('failed');

      // Click: the whole ledger row.
      await page.locator('.grid-row[data-portfolio="1002"][data-report-type="constituent.close"] .cell[data-from="2024-03-20"]').click();
      await page.waitForSelector('#detail:not([hidden])');
      const field = (name: string) => page.textContent(`#detail dd[data-field="${name}"]`);
      expect(await field('outcome')).toBe('failed');
      expect(await field('error')).toBe('FILE_INVALID: line 7, column Closing Price: "12,5" is not a decimal');
      expect(await field('file name')).toBe('1002_constituent.close_2024-03-20.csv');
      expect(await field('sha256')).toBe('ab'.repeat(32));
      expect(await field('attempts')).toBe('5');
      expect(await field('bytes')).toBe('4,096');
      expect(await field('updated')).toBe('2024-04-01T02:00:00.000Z');
      expect(await page.$('#detail dd[data-field="attempt took"]')).toBeNull();
      await page.locator('.grid-row[data-portfolio="1001"][data-report-type="index"] .cell[data-from="2024-03-04"]').click();
      await expect.poll(() => field('outcome')).toBe('loaded');
      expect(await field('attempt took')).toBe('1,500 ms');
      expect(await field('rows')).toBe('3');
      // Lineage: the id its rows carry (index_report.load_id), and when that load wrote them.
      expect(await field('load id')).toBe(`00000000-0000-4000-8${TYPES.indexOf('index')}00-100120240304`);
      expect(await field('loaded at')).toBe('2024-04-01T02:00:00.000Z');

      // Failures grouped by code and portfolio, with the command that re-runs them.
      const groups = await page.$$eval('#failure-groups tr[data-code]', (rows) =>
        rows.map((row) => [(row as HTMLElement).dataset.code, (row as HTMLElement).dataset.portfolio, row.children[2]?.textContent]),
      );
      expect(groups).toEqual([
        ['EXPORT_FORBIDDEN', '1003', '5'],
        ['FILE_INVALID', '1002', '1'],
      ]);
      // The command is what the user copies: checked whole.
      expect(await page.textContent('#retry-run')).toBe(
        `report-sync run --from 2024-03-11 --to 2024-03-20 --portfolios 1002,1003 --report-types constituent.close,index --only-missing --config ${configFile}`,
      );
      expect(await page.textContent('#failures')).toContain('--failed --code FILE_INVALID');

      // A filter: the URL carries it, and the grid keeps only rows with a failure.
      await page.selectOption('#filters select[name="outcome"]', 'failed');
      await page.click('#filters button[type="submit"]');
      await page.waitForURL(/outcome=failed/);
      await expect.poll(async () => (await page.$$('.grid-row')).length).toBe(2);
      expect(new URL(page.url()).searchParams.get('from')).toBe('2024-03-01');
      const rows = await page.$$eval('.grid-row', (nodes) => nodes.map((row) => `${(row as HTMLElement).dataset.portfolio} ${(row as HTMLElement).dataset.reportType}`));
      expect(rows).toEqual(['1002 constituent.close', '1003 index']);
      expect(await page.$$eval('.cell:not(.dim)', (cells) => cells.map((cell) => (cell as HTMLElement).dataset.outcome))).toEqual(Array(6).fill('failed'));

      // The link can be shared: opened afresh, it shows the same.
      const shared = await browser.newPage();
      await shared.goto(page.url());
      await shared.waitForSelector('.grid-row');
      expect((await shared.$$('.grid-row')).length).toBe(2);
      expect(await shared.inputValue('#filters select[name="outcome"]')).toBe('failed');
      await shared.close();

      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.goto(`${dashboard.url}?from=2024-03-01&to=2024-03-31`);
      await page.waitForSelector('.grid-row');
      const screenshot = join(SCREENSHOTS, 'dashboard.png');
      await page.screenshot({ path: screenshot, fullPage: true });
      expect(statSync(screenshot).size).toBeGreaterThan(10_000);
      expect(readFileSync(screenshot).subarray(1, 4).toString()).toBe('PNG');

      expect(foreign).toEqual([]);
    } finally {
      await page.close();
      await dashboard.close();
    }
  });

  it('aggregates a long range by month, and a month drills down to its days', async () => {
    const dashboard = await startDashboard(seeded, configFile);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      await page.goto(`${dashboard.url}?from=2023-01-01&to=2024-03-31&period=month&portfolios=1001&reportTypes=index`);
      await page.waitForSelector('.grid-row');
      const months = await page.$$eval('.cell', (cells) => cells.map((cell) => `${(cell as HTMLElement).dataset.from}:${(cell as HTMLElement).dataset.outcome}`));
      expect(months).toHaveLength(15);
      expect(months).toContain('2023-06-01:failed');
      expect(months).toContain('2023-05-01:loaded');
      // March 2024 holds three days never attempted: the worst inside is missing.
      expect(months).toContain('2024-03-01:missing');
      await page.locator('.cell[data-from="2023-06-01"]').hover();
      await expect.poll(() => page.textContent('#tooltip')).toContain('failed 1, loaded 29');

      await page.locator('.cell[data-from="2023-06-01"]').click();
      await page.waitForURL(/from=2023-06-01/);
      const url = new URL(page.url());
      expect(url.searchParams.get('to')).toBe('2023-06-30');
      expect(url.searchParams.get('period')).toBeNull();
      await expect.poll(async () => (await page.$$('.cell')).length).toBe(30);
      const days = await gridOnPage(page);
      expect(days.get('1001 index 2023-06-14')).toBe('failed');
      expect(days.get('1001 index 2023-06-13')).toBe('loaded');

      // Back goes back to the months.
      await page.goBack();
      await expect.poll(async () => (await page.$$('.cell')).length).toBe(15);
    } finally {
      await page.close();
      await dashboard.close();
    }
  });

  it('with REDIS_URL: queued cells, the queue panel, and Bull Board read-only under /queues, all served locally', async () => {
    const scope = testPrefix();
    const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
    const queue = new Queue('report-exports', { connection, prefix: scope.prefix });
    const queuedConfig = join(seeded.dir, 'queued-settings.json');
    writeFileSync(queuedConfig, JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: ['index', 'constituent.close'], queue: { prefix: scope.prefix } }));
    // The three days never attempted are waiting in the queue (no worker runs).
    for (const date of ['2024-03-25', '2024-03-26', '2024-03-27']) {
      const slice = { portfolioId: 1001, reportType: 'index' as const, reportDate: date };
      await queue.add('export-slice', slice, { jobId: sliceJobId(slice) });
    }
    const dashboard = await startDashboard(seeded, queuedConfig, { REDIS_URL: TEST_REDIS_URL });
    const { page, foreign } = await openMarch(browser, dashboard);
    try {
      const grid = await gridOnPage(page);
      for (const date of ['2024-03-25', '2024-03-26', '2024-03-27']) expect(grid.get(`1001 index ${date}`)).toBe('queued');
      expect(await page.textContent('#legend')).toContain('queued 3');
      await page.waitForSelector('#queue-panel:not([hidden]) [data-count="waiting"]');
      expect(await page.textContent('#queue-panel [data-count="waiting"] b')).toBe('3');
      expect(await page.textContent('#queue-panel [data-count="active"] b')).toBe('0');

      await page.locator('.grid-row[data-portfolio="1001"][data-report-type="index"] .cell[data-from="2024-03-26"]').click();
      await page.waitForSelector('#detail:not([hidden])');
      expect(await page.textContent('#detail dd[data-field="outcome"]')).toBe('missing');
      expect(await page.textContent('#detail dd[data-field="job"]')).toBe('waiting');

      await page.click('#queue-panel a');
      await page.waitForURL(/\/queues\/?$/);
      await page.waitForSelector('text=report-exports', { timeout: 15_000 });
      expect(foreign).toEqual([]);

      // Read-only, whatever Bull Board's API offers.
      const response = await fetch(`${dashboard.url}queues/api/queues/report-exports/clean/waiting`, { method: 'PUT' });
      expect(response.status).toBe(405);
      expect(await queue.getJobCounts('waiting')).toEqual({ waiting: 3 });
    } finally {
      await page.close();
      await dashboard.close();
      await queue.close();
      connection.disconnect();
      await scope.cleanup();
    }
  });
});
