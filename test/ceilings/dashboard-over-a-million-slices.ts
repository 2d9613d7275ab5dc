import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countIsoDates } from '../../src/dates/report-date.js';
import { startCliProcess, type CliProcess } from '../helpers/cli-process.js';
import { launchChromium } from '../helpers/headless-chromium.js';
import { DEEP_RECURSION } from '../helpers/deep-recursion.js';
import { createTempWarehouse, migrationNamesFrom } from '../helpers/temp-warehouse.js';
import type { WarehouseDialect } from '../../src/warehouse/open-warehouse.js';
import { until } from '../helpers/until.js';
import { migrateWarehouse } from '../../src/warehouse/schema/migrate-warehouse.js';

/*
 * The dashboard's aggregate endpoint over a ledger of a million slices (100 portfolios × 5 report
 * types × 2,000 days): it answers from per-period counts in SQL (whole months from the ledger's
 * monthly counts, here filled by the migration that made them, as for a warehouse upgraded with
 * years of history; the triggers that keep them are tested row by row elsewhere), in bounded time
 * and memory, and sends the browser one cell per pair and month or week, never one per slice. The
 * figures are printed; docs/operations.md ("The coverage dashboard") quotes them.
 */

const PORTFOLIOS = Array.from({ length: 100 }, (_, i) => 2001 + i);
const TYPES = ['index', 'constituent.close', 'constituent.open', 'constituent.proforma', 'constituent.corporateactions'];
const FIRST = '2019-01-01';
const DAYS = 2000;
const LAST = '2024-06-22'; // FIRST + 1,999 days
const SLICES = PORTFOLIOS.length * TYPES.length * DAYS;
/** Every 997th slice failed, every 101st never attempted; the rest loaded. */
const FAILED_EVERY = 997;
const MISSING_EVERY = 101;

/** Peak and current resident memory of a process, in MB, from /proc (Linux). */
function memoryOf(pid: number): { peakMb: number; nowMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
  return { peakMb: Math.round(kb('VmHWM') / 1024), nowMb: Math.round(kb('VmRSS') / 1024) };
}

/**
 * The tests of one dialect, in a test file of their own (`dashboard-aggregate-<dialect>.test.ts`):
 * each seeds a million ledger rows first, and as three files they spread over the computing forks
 * instead of holding one of them for all three seeds.
 */
export function describeDashboardOverAMillionSlices(dialect: WarehouseDialect): void {
  describe(`the dashboard over a million-slice ledger (${dialect})`, () => {
    let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
    let dashboard: CliProcess;
    let url: string;
    let dir: string;
    const expected = { failed: 0, missing: 0, loaded: 0 };

    beforeAll(async () => {
      // The ledger seeded before the monthly counts exist, then counted once by their migration: a
      // million rows through the triggers would spend most of this file's time seeding.
      warehouse = await createTempWarehouse(dialect, { before: '0007-ledger-rollup' });
      const seedStarted = performance.now();
      // Generated inside the database: a million rows through the driver would take minutes.
      const types = sql.join(TYPES.map((type, k) => sql`(${type}, cast(${k} as integer))`));
      const status = sql`case when (n % ${FAILED_EVERY}) = 0 then 'failed' else 'loaded' end`;
      if (dialect === 'sqlite') {
        await sql`
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${DAYS - 1}),
          p(id) as (select ${PORTFOLIOS[0]} union all select id + 1 from p where id < ${PORTFOLIOS.at(-1)}),
          t(name, k) as (values ${types}),
          s as (select p.id, t.name, d.day, (p.id * ${TYPES.length} + t.k) * ${DAYS} + d.day as n from p, t, d)
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        select id, name, date(${FIRST}, '+' || day || ' days'), ${status}, 10, 1,
          case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE: 503' end, case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE' end,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from s where (n % ${MISSING_EVERY}) <> 0`.execute(warehouse.db);
      } else if (dialect === 'mysql') {
        const named = sql.join(
          TYPES.map((type, k) => sql`select ${type} as name, ${k} as k`),
          sql` union all `,
        );
        await sql`${DEEP_RECURSION}
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        with recursive d(day) as (select 0 union all select day + 1 from d where day < ${DAYS - 1}),
          p(id) as (select ${PORTFOLIOS[0]} union all select id + 1 from p where id < ${PORTFOLIOS.at(-1)}),
          t as (${named}),
          s as (select p.id, t.name, d.day, (p.id * ${TYPES.length} + t.k) * ${DAYS} + d.day as n from p, t, d)
        select id, name, cast(${FIRST} as date) + interval day day, ${status}, 10, 1,
          case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE: 503' end, case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE' end,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from s where (n % ${MISSING_EVERY}) <> 0`.execute(warehouse.db);
        await sql`analyze table report_loads`.execute(warehouse.db);
      } else {
        await sql`
        insert into report_loads (portfolio_id, report_type, report_date, status, row_count, attempts, error, error_code, updated_at, checked_at)
        select id, name, cast(${FIRST} as date) + day, ${status}, 10, 1,
          case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE: 503' end, case when (n % ${FAILED_EVERY}) = 0 then 'EXPORT_UNAVAILABLE' end,
          '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'
        from (select p.id, t.name, d.day, (p.id * ${TYPES.length} + t.k) * ${DAYS} + d.day as n
              from generate_series(${PORTFOLIOS[0]}::int, ${PORTFOLIOS.at(-1)}::int) p(id), (values ${types}) t(name, k), generate_series(0, ${DAYS - 1}) d(day)) s
        where (n % ${MISSING_EVERY}) <> 0`.execute(warehouse.db);
        await sql`analyze report_loads`.execute(warehouse.db);
      }
      for (let p = 0; p < PORTFOLIOS.length; p += 1) {
        for (let k = 0; k < TYPES.length; k += 1) {
          for (let day = 0; day < DAYS; day += 1) {
            const n = (PORTFOLIOS[p]! * TYPES.length + k) * DAYS + day;
            if (n % MISSING_EVERY === 0) expected.missing += 1;
            else if (n % FAILED_EVERY === 0) expected.failed += 1;
            else expected.loaded += 1;
          }
        }
      }
      expect((await migrateWarehouse(warehouse)).applied).toEqual(migrationNamesFrom('0007-ledger-rollup'));
      const seeded = await warehouse.db
        .selectFrom('report_loads')
        .select(({ fn }) => fn.countAll<number | string>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(seeded.n)).toBe(SLICES - expected.missing);
      const counted = await warehouse.db
        .selectFrom('report_loads_monthly')
        .select(({ fn }) => fn.sum<number | string>('slices').as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(counted.n)).toBe(SLICES - expected.missing);
      console.log(`${dialect}: seeded ${Number(seeded.n).toLocaleString('en-US')} ledger rows in ${Math.round(performance.now() - seedStarted)} ms`);

      dir = mkdtempSync(join(tmpdir(), 'report-sync-aggregate-'));
      const configFile = join(dir, `dashboard-aggregate-${dialect}.json`);
      writeFileSync(configFile, JSON.stringify({ portfolios: PORTFOLIOS, reportTypes: TYPES }));
      dashboard = startCliProcess(['dashboard', '--port', '0', '--config', configFile], { cwd: dir, env: { DATABASE_URL: warehouse.databaseUrl } });
      await until(
        () => /at (http:\/\/\S+)/.test(dashboard.stdout()),
        15_000,
        () => `the dashboard to listen (output so far: ${dashboard.output()})`,
      );
      url = /at (http:\/\/\S+)/.exec(dashboard.stdout())![1]!;
    }, 180_000);

    afterAll(async () => {
      dashboard?.child.kill('SIGTERM');
      await dashboard?.exited;
      await warehouse?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers the whole range by month and by week from aggregates, in bounded time and memory', async () => {
      const before = memoryOf(dashboard.child.pid!);
      const figures: string[] = [];
      for (const period of ['month', 'week'] as const) {
        const started = performance.now();
        const response = await fetch(`${url}api/coverage?from=${FIRST}&to=${LAST}&period=${period}`);
        const body = await response.text();
        const elapsed = Math.round(performance.now() - started);
        expect(response.status, body.slice(0, 300)).toBe(200);
        const view = JSON.parse(body) as { period: string; rows: { cells: number[][] }[]; columns: unknown[]; totals: Record<string, number> };
        expect(view.period).toBe(period);
        expect(view.rows).toHaveLength(PORTFOLIOS.length * TYPES.length);
        // One cell per pair and period: the browser never receives a cell per slice.
        const cells = view.rows.length * view.columns.length;
        expect(view.columns.length).toBe(period === 'month' ? 66 : 286);
        expect(cells).toBeLessThan(SLICES / 6);
        expect(view.totals).toMatchObject({ failed: expected.failed, missing: expected.missing, loaded: expected.loaded, no_data: 0 });
        // Bounded: well inside the time an operator waits for a page, however the two cores are shared.
        expect(elapsed).toBeLessThan(20_000);
        figures.push(`${period}: ${cells.toLocaleString('en-US')} cells, ${Math.round(body.length / 1024)} KiB, ${elapsed} ms`);
      }
      const after = memoryOf(dashboard.child.pid!);
      console.log(
        `${dialect}: ${SLICES.toLocaleString('en-US')} slices (${countIsoDates(FIRST, LAST)} days); ${figures.join('; ')}; RSS ${before.nowMb} MB before, peak ${after.peakMb} MB`,
      );
      // A million ledger rows read into memory would be many hundreds of MB. What grows here is the
      // cells (at most MAX_CELLS per answer), not the slices: SQLite's own GROUP BY takes ~9 MB.
      expect(after.peakMb - before.nowMb).toBeLessThan(160);
      expect(after.peakMb).toBeLessThan(350);
    }, 120_000);

    it('draws the whole range in the browser by month, readable and quick', async () => {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        const started = performance.now();
        // Everything the ledger holds is one parameter away (the default is the recent nights): up to yesterday, one cell per month.
        await page.goto(`${url}?from=${FIRST}`);
        await expect.poll(async () => (await page.$$('.grid-row')).length, { timeout: 30_000 }).toBe(PORTFOLIOS.length * TYPES.length);
        const elapsed = Math.round(performance.now() - started);
        expect(await page.inputValue('#filters input[name="from"]')).toBe(FIRST);
        const to = await page.inputValue('#filters input[name="to"]');
        expect(to >= LAST).toBe(true);
        expect(await page.textContent('#range')).toContain('one cell per month');
        const months = (Number(to.slice(0, 4)) - 2019) * 12 + Number(to.slice(5, 7));
        expect(await page.$$eval('.grid-row:first-child .cell', (cells) => cells.length)).toBe(months);
        expect(elapsed).toBeLessThan(20_000);
        console.log(`${dialect}: the browser drew ${PORTFOLIOS.length * TYPES.length} rows by month in ${elapsed} ms`);
      } finally {
        await browser.close();
      }
    }, 60_000);
  });
}
