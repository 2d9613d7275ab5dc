import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { main } from '../../src/cli/main.js';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import { coverageView } from '../../src/dashboard/coverage-view.js';
import type { WarehouseRow } from '../../src/extract/row-builder.js';
import { constituentReport } from '../../src/reports/constituent-report.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import type { Slice } from '../../src/slice/slice.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { SliceLoader } from '../../src/warehouse/loading/slice-loader.js';
import { createTempWarehouse, DIALECTS } from '../helpers/temp-warehouse.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { seedConstituentRows } from './seed-constituent-rows.js';
import { seededStatus, seedLedgerSlices } from './seed-ledger-slices.js';

const SIZES = {
  full: { tableRows: 20_000_000, slices: 40, rowsPerSlice: 500, portfolios: 1000, days: 3334 },
  smoke: { tableRows: 100_000, slices: 4, rowsPerSlice: 200, portfolios: 20, days: 400 },
} as const satisfies Record<BenchSize, unknown>;

/** The portfolio whose slices are timed; the seeded ones start after it. */
const MEASURED_PORTFOLIO = 1;
/** Rounds of replacing the timed slices at each size; the fastest counts (the machine is shared). */
const REPLACE_ROUNDS = 3;
/** The last day of the seeded ledger. */
const LEDGER_LAST = '2026-06-30';
/** Portfolios the dashboard's month view is asked about (a ten-year month view of every pair would exceed its cells). */
const MONTH_VIEW_PORTFOLIOS = 100;
/** Each answer of the ledger is asked this many times; the fastest counts. */
const ASKS = 2;
const LEDGER_TARGET_MS = 1000;

/**
 * Issue #27, part 5: a warehouse that stays fast as it grows. Two questions per dialect:
 *
 * - Does loading a slice cost more when `constituent_report` holds years of other slices? The
 *   same slices are loaded (and replaced, the delete of their old rows included) into an empty
 *   table and into one of 20 million rows, through the SliceLoader; per-slice time at 20 M ≤ 1.2 ×
 *   at 0.
 * - Do `status`, `check` and the dashboard's month view stay under a second over a ledger of 20
 *   million slices (1,000 portfolios × six report types × ten years)? `status` and `check` run as
 *   the command does, in this process (no start-up); the month view is the dashboard's answer for
 *   ten years of 100 portfolios. The baseline is what the month view's counting cost before the
 *   monthly counts: one GROUP BY over the ledger rows of the range.
 */
export const benchmark: Benchmark = {
  name: 'warehouse-growth',
  order: 8,
  async run(size) {
    const results: BenchResult[] = [];
    for (const dialect of DIALECTS) results.push(await tableGrowth(dialect, size));
    for (const dialect of DIALECTS) results.push(await ledgerGrowth(dialect, size));
    return results;
  },
};

const DIALECT_NAMES: Record<string, string> = { sqlite: 'SQLite', postgres: 'Postgres' };

async function tableGrowth(dialect: (typeof DIALECTS)[number], size: BenchSize): Promise<BenchResult> {
  const { tableRows, slices: count, rowsPerSlice } = SIZES[size];
  const warehouse = await createTempWarehouse(dialect);
  try {
    const loader = new SliceLoader({ warehouse, slicesPerCommit: 1 });
    const slices: Slice[] = Array.from({ length: count }, (_, i) => ({
      portfolioId: MEASURED_PORTFOLIO,
      reportType: 'constituent.close',
      reportDate: shiftIsoDate('2024-06-01', i),
    }));
    let round = 0;
    const loadAll = async (): Promise<number> => {
      round += 1;
      const started = performance.now();
      for (const slice of slices) {
        await loader.replaceRows({
          slice,
          definition: constituentReport,
          rows: constituentRows(slice, rowsPerSlice),
          file: { format: 'csv', fileName: null, bytes: rowsPerSlice * 120, sha256: createHash('sha256').update(`${round} ${slice.reportDate}`).digest('hex') },
          attempts: 1,
        });
      }
      return (performance.now() - started) / count;
    };
    const measure = async () => {
      const fresh = await loadAll();
      let replace = Infinity;
      for (let i = 0; i < REPLACE_ROUNDS; i += 1) replace = Math.min(replace, await loadAll());
      return { fresh, replace };
    };

    // A first pass warms the code and the connection up; the figures at 0 are the second pass's.
    await measure();
    const empty = await measure();
    await warehouse.db.deleteFrom('constituent_report').where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    await warehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    const seedStarted = performance.now();
    await seedConstituentRows(warehouse, { dialect, rows: tableRows, rowsPerSlice: 500, firstPortfolio: MEASURED_PORTFOLIO + 1, days: 3650 });
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const grown = await measure();

    const ledger = await warehouse.db.selectFrom('report_loads').select(['report_date', 'status', 'row_count']).where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    const planned = new Set(slices.map((slice) => slice.reportDate));
    const besides = await warehouse.db
      .selectFrom('constituent_report')
      .select(({ fn }) => fn.countAll<number | string>().as('rows'))
      .where('portfolio_id', '<>', MEASURED_PORTFOLIO)
      .executeTakeFirstOrThrow();
    const loaded = await warehouse.db
      .selectFrom('constituent_report')
      .select(({ fn }) => fn.countAll<number | string>().as('rows'))
      .where('portfolio_id', '=', MEASURED_PORTFOLIO)
      .executeTakeFirstOrThrow();
    const ratio = grown.replace / empty.replace;
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return {
      benchmark: `warehouse growth: load a slice, ${DIALECT_NAMES[dialect]}`,
      product: `${ms(grown.replace)}/slice at ${millions(tableRows)} rows`,
      baseline: `${ms(empty.replace)}/slice at 0 rows`,
      ratio,
      target: '≤ 1.2 × at 0',
      pass: ratio <= 1.2,
      note:
        `${count} constituent.close slices × ${rowsPerSlice} rows, replaced (old rows deleted) through the SliceLoader, a transaction each, fastest of ${REPLACE_ROUNDS} rounds; ` +
        `first load of the same slices ${ms(empty.fresh)} at 0, ${ms(grown.fresh)} at ${millions(tableRows)}; table of ${millions(tableRows)} rows (slices of 500, ten years) seeded in ${seedSeconds.toFixed(0)} s`,
      facts: {
        slicesPlanned: count,
        slicesRecorded: ledger.filter((row) => planned.has(String(row.report_date))).length,
        slicesLoaded: ledger.filter((row) => planned.has(String(row.report_date)) && row.status === 'loaded').length,
        // The ledger's primary key is the slice: one row each, or none.
        ledgerRowsPerSlice: 1,
        ledgerRowsUnplanned: ledger.filter((row) => !planned.has(String(row.report_date))).length,
        ledgerRowCount: ledger.reduce((sum, row) => sum + Number(row.row_count), 0),
        rowsExpected: count * rowsPerSlice,
        rowsLoaded: Number(loaded.rows),
        reportRowsBeside: Number(besides.rows),
        reportRowsBesidePlanned: tableRows,
      },
    };
  } finally {
    await warehouse.close();
  }
}

/** A constituent file's rows for the slice, as the row builder hands them to the loader. */
async function* constituentRows(slice: Slice, rows: number): AsyncGenerator<WarehouseRow> {
  for (let line = 1; line <= rows; line += 1) {
    yield {
      portfolio_id: slice.portfolioId,
      report_type: slice.reportType,
      report_date: slice.reportDate,
      line_number: line,
      effective_date: slice.reportDate,
      isin: `XS${String(slice.portfolioId * 1000 + line).padStart(10, '0')}`,
      security_name: `Security ${line}`,
      security_ticker: `T${line}`,
      exchange_code: 'XLON',
      closing_price: '101.25',
      currency: 'GBP',
      closing_fx: '1.0',
      index_shares: '1500',
      index_weighting: '0.002',
      extra: null,
    };
  }
}

async function ledgerGrowth(dialect: (typeof DIALECTS)[number], size: BenchSize): Promise<BenchResult> {
  const { portfolios, days } = SIZES[size];
  const from = shiftIsoDate(LEDGER_LAST, -(days - 1));
  const warehouse = await createTempWarehouse(dialect);
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-growth-'));
  try {
    const seedStarted = performance.now();
    await seedLedgerSlices(warehouse, { dialect, portfolios, days, from });
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const expectedOf = (last: number): OutcomeCounts => {
      const counts = { loaded: 0, noData: 0, failed: 0, missing: 0 };
      for (let p = 1; p <= last; p += 1) {
        for (let day = 0; day < days; day += 1) {
          const status = seededStatus({ days }, p, day);
          counts[status === 'no_data' ? 'noData' : status] += REPORT_TYPES.length;
        }
      }
      return counts;
    };
    const expected = expectedOf(portfolios);

    const allPortfolios = Array.from({ length: portfolios }, (_, i) => i + 1);
    mkdirSync(join(dir, 'config'));
    writeFileSync(join(dir, 'config/default.json'), JSON.stringify({ portfolios: allPortfolios, reportTypes: REPORT_TYPES }));
    const command = async (args: readonly string[]): Promise<{ code: number; stdout: string }> => {
      let stdout = '';
      const sink = (keep: boolean) =>
        new Writable({
          write(chunk: Buffer | string, _encoding, callback) {
            if (keep) stdout += chunk.toString();
            callback();
          },
        });
      const code = await main(args, {
        stdout: sink(true),
        stderr: sink(false),
        env: { DATABASE_URL: warehouse.databaseUrl, LOG_LEVEL: 'error' },
        cwd: dir,
        logDestination: sink(false),
      });
      return { code, stdout };
    };
    const fastest = async <T>(ask: () => Promise<T>): Promise<{ ms: number; answer: T }> => {
      let best = { ms: Infinity, answer: undefined as T };
      for (let i = 0; i < ASKS; i += 1) {
        const started = performance.now();
        const answer = await ask();
        const ms = performance.now() - started;
        if (ms < best.ms) best = { ms, answer };
      }
      return best;
    };

    const status = await fastest(() => command(['status', '--from', from, '--to', LEDGER_LAST]));
    const check = await fastest(() => command(['check', '--date', LEDGER_LAST, '--days', String(days), '--no-alert', '--json']));
    const ledger = new Ledger(warehouse);
    const viewPortfolios = allPortfolios.slice(0, MONTH_VIEW_PORTFOLIOS);
    const years = Math.round(days / 365);
    const monthView = await fastest(() =>
      coverageView({
        ledger,
        query: { from, to: LEDGER_LAST, period: 'month', portfolios: viewPortfolios },
        defaults: { portfolios: allPortfolios, reportTypes: REPORT_TYPES, timeZone: 'UTC', lookbackDays: 7, earliest: '2000-01-01' },
      }),
    );
    // What the month view's counting was before the monthly counts: the ledger rows of the range, grouped.
    const ledgerScan = await fastest(() =>
      sql`select portfolio_id, report_type, ${warehouse.engine.periodStart('month')} as period_start, count(*) as slices
          from report_loads where report_date >= ${from} and report_date <= ${LEDGER_LAST} and portfolio_id in (${sql.join(viewPortfolios)})
          group by 1, 2, 3`.execute(warehouse.db),
    );

    const { totals } = monthView.answer;
    const checked = JSON.parse(check.answer.stdout) as { loaded: number; noData: number; failed: number; missing: number };
    const slowest = Math.max(status.ms, check.ms, monthView.ms);
    const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const slices = expected.loaded + expected.noData + expected.failed;
    return {
      benchmark: `ledger of ${millions(slices)} slices: status, check, month view, ${DIALECT_NAMES[dialect]}`,
      product: `${seconds(slowest)} slowest (status ${seconds(status.ms)}, check ${seconds(check.ms)}, month view ${seconds(monthView.ms)})`,
      baseline: `${seconds(ledgerScan.ms)} (month view counted from the ledger)`,
      ratio: slowest / LEDGER_TARGET_MS,
      target: '≤ 1 s',
      pass: slowest <= LEDGER_TARGET_MS,
      note:
        `${portfolios.toLocaleString('en-US')} portfolios × ${REPORT_TYPES.length} report types × ${days.toLocaleString('en-US')} days (a month of 1% of portfolios missing, failures on every 97th day of 2%); ` +
        `status and check over all of it, in this process, fastest of ${ASKS}; month view: ${years} years of ${viewPortfolios.length} portfolios; ratio is the slowest ÷ 1 s; seeded in ${seedSeconds.toFixed(0)} s`,
      facts: {
        slicesPlanned: slices,
        slicesRecorded: checked.loaded + checked.noData + checked.failed,
        slicesLoaded: checked.loaded,
        slicesByOutcome: { loaded: checked.loaded, noData: checked.noData, failed: checked.failed, missing: checked.missing },
        slicesByOutcomeExpected: expected,
        monthViewByOutcome: { loaded: totals.loaded, noData: totals.no_data, failed: totals.failed, missing: totals.missing },
        monthViewByOutcomeExpected: expectedOf(viewPortfolios.length),
        // check exits 1 by design here (the seed has failures and gaps); its answer is checked above.
        nonZeroExits: status.answer.code === 0 ? 0 : 1,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await warehouse.close();
  }
}

type OutcomeCounts = { loaded: number; noData: number; failed: number; missing: number };

function millions(count: number): string {
  return count >= 1_000_000 ? `${(count / 1_000_000).toFixed(count % 1_000_000 === 0 ? 0 : 1)} M` : count.toLocaleString('en-US');
}
