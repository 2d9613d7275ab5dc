import { createHash } from 'node:crypto';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import type { WarehouseRow } from '../../src/extract/row-builder.js';
import { constituentReport } from '../../src/reports/constituent-report.js';
import type { Slice } from '../../src/slice/slice.js';
import type { WarehouseHandle } from '../../src/warehouse/engine/warehouse-engine.js';
import { SliceLoader } from '../../src/warehouse/loading/slice-loader.js';
import { createTempWarehouse, DIALECTS } from '../helpers/temp-warehouse.js';
import type { BenchResult, BenchSize, Benchmark } from './bench-result.js';
import { DIALECT_NAMES, millions } from './dialect-names.js';
import { seedConstituentRows } from './seed-constituent-rows.js';

const SIZES = {
  full: { tableRows: 20_000_000, slices: 40, rowsPerSlice: 500 },
  smoke: { tableRows: 100_000, slices: 4, rowsPerSlice: 200 },
} as const satisfies Record<BenchSize, unknown>;

/** The portfolio whose slices are timed; the seeded ones start after it. */
const MEASURED_PORTFOLIO = 1;
/** The seeded slices' rows, and the days of each seeded portfolio's history. */
const SEED_ROWS_PER_SLICE = 500;
const SEED_DAYS = 3650;
/** Rounds of replacing the timed slices in each table, the two tables' rounds alternating; the fastest counts (the machine is shared). */
const REPLACE_ROUNDS = 4;

/**
 * Issue #27, part 5: a warehouse that stays fast as it grows. Does loading a slice cost more when
 * `constituent_report` holds years of other slices? The same slices are loaded (and replaced, the
 * delete of their old rows included) into an empty table and into one of 20 million rows, through
 * the SliceLoader, per dialect: per-slice time at 20 M ≤ 1.2 × at 0. Both tables are open at once
 * and their rounds alternate, so that both are measured under the same load of a shared machine
 * (measured minutes apart, before and after the seed, the ratio followed the machine's load more
 * than the table's size). Its sibling `ledger-growth.bench.ts` asks the same of the ledger's questions.
 */
export const benchmark: Benchmark = {
  name: 'warehouse-growth',
  order: 8,
  async run(size) {
    const results: BenchResult[] = [];
    for (const dialect of DIALECTS) results.push(await tableGrowth(dialect, size));
    return results;
  },
};

/** One table's side: its warehouse and the loads of the timed slices into it. */
interface GrowthSide {
  readonly warehouse: WarehouseHandle;
  /** Loads (or replaces) every timed slice once; ms per slice. */
  loadAll(): Promise<number>;
}

async function tableGrowth(dialect: (typeof DIALECTS)[number], size: BenchSize): Promise<BenchResult> {
  const { tableRows, slices: count, rowsPerSlice } = SIZES[size];
  const slices: Slice[] = Array.from({ length: count }, (_, i) => ({
    portfolioId: MEASURED_PORTFOLIO,
    reportType: 'constituent.close',
    reportDate: shiftIsoDate('2024-06-01', i),
  }));
  let round = 0;
  const side = (warehouse: WarehouseHandle): GrowthSide => {
    const loader = new SliceLoader({ warehouse, slicesPerCommit: 1 });
    return {
      warehouse,
      loadAll: async () => {
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
      },
    };
  };
  const opened: WarehouseHandle[] = [];
  try {
    const grownWarehouse = await createTempWarehouse(dialect);
    opened.push(grownWarehouse);
    const seedStarted = performance.now();
    await seedConstituentRows(grownWarehouse, {
      dialect,
      rows: tableRows,
      rowsPerSlice: SEED_ROWS_PER_SLICE,
      firstPortfolio: MEASURED_PORTFOLIO + 1,
      days: SEED_DAYS,
    });
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const emptyWarehouse = await createTempWarehouse(dialect);
    opened.push(emptyWarehouse);
    const empty = side(emptyWarehouse);
    const grown = side(grownWarehouse);

    // A first pass warms the code and the connection up; the empty table's first load is then timed again.
    await empty.loadAll();
    await empty.loadAll();
    await emptyWarehouse.db.deleteFrom('constituent_report').where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    await emptyWarehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    const fresh = { empty: await empty.loadAll(), grown: await grown.loadAll() };
    const replace = { empty: Infinity, grown: Infinity };
    for (let i = 0; i < REPLACE_ROUNDS; i += 1) {
      // Each pair in the other order, so that neither table always follows the other.
      const order = i % 2 === 0 ? (['empty', 'grown'] as const) : (['grown', 'empty'] as const);
      for (const which of order) replace[which] = Math.min(replace[which], await { empty, grown }[which].loadAll());
    }

    // What the loads left is counted in the grown table, beside the seeded rows.
    const warehouse = grownWarehouse;
    const ledger = await warehouse.db.selectFrom('report_loads').select(['report_date', 'status', 'row_count']).where('portfolio_id', '=', MEASURED_PORTFOLIO).execute();
    const planned = new Set(slices.map((slice) => slice.reportDate));
    const besides = await warehouse.db
      .selectFrom('constituent_report')
      .select(({ fn }) => [fn.countAll<number | string>().as('rows'), fn.count<number | string>('portfolio_id').distinct().as('portfolios')])
      .where('portfolio_id', '<>', MEASURED_PORTFOLIO)
      .executeTakeFirstOrThrow();
    const loaded = await warehouse.db
      .selectFrom('constituent_report')
      .select(({ fn }) => fn.countAll<number | string>().as('rows'))
      .where('portfolio_id', '=', MEASURED_PORTFOLIO)
      .executeTakeFirstOrThrow();
    const ratio = replace.grown / replace.empty;
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return {
      benchmark: `warehouse growth: load a slice, ${DIALECT_NAMES[dialect]}`,
      product: `${ms(replace.grown)}/slice at ${millions(tableRows)} rows`,
      baseline: `${ms(replace.empty)}/slice at 0 rows`,
      ratio,
      target: '≤ 1.2 × at 0',
      pass: ratio <= 1.2,
      note:
        `${count} constituent.close slices × ${rowsPerSlice} rows, replaced (old rows deleted) through the SliceLoader, a transaction each, fastest of ${REPLACE_ROUNDS} rounds each, the two tables' rounds alternating; ` +
        `first load of the same slices ${ms(fresh.empty)} at 0, ${ms(fresh.grown)} at ${millions(tableRows)}; table of ${millions(tableRows)} rows (slices of 500, ten years) seeded in ${seedSeconds.toFixed(0)} s`,
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
        reportPortfoliosBeside: Number(besides.portfolios),
        reportPortfoliosBesidePlanned: Math.ceil(tableRows / SEED_ROWS_PER_SLICE / SEED_DAYS),
      },
    };
  } finally {
    for (const warehouse of opened) await warehouse.close();
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
