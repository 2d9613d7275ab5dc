import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { main } from '../../src/cli/main.js';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import { coverageView } from '../../src/dashboard/coverage-view.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { createTempWarehouse, DIALECTS } from '../helpers/temp-warehouse.js';
import type { BenchResult, BenchSize, Benchmark, OutcomeCounts } from './bench-result.js';
import { DIALECT_NAMES, millions } from './dialect-names.js';
import { seededStatus, seedLedgerSlices } from './seed-ledger-slices.js';

const SIZES = {
  full: { portfolios: 1000, days: 3334 },
  smoke: { portfolios: 20, days: 400 },
} as const satisfies Record<BenchSize, unknown>;

/** The last day of the seeded ledger. */
const LEDGER_LAST = '2026-06-30';
/** Portfolios the dashboard's month view is asked about (a ten-year month view of every pair would exceed its cells). */
const MONTH_VIEW_PORTFOLIOS = 100;
/** Each answer of the ledger is asked this many times; the fastest counts. */
const ASKS = 2;
const LEDGER_TARGET_MS = 1000;

/**
 * Issue #27, part 5: do `status`, `check` and the dashboard's month view stay under a second over
 * a ledger of 20 million slices (1,000 portfolios × six report types × ten years)? `status` and
 * `check` run as the commands do, in this process (no start-up); the month view is the
 * dashboard's answer for ten years of 100 portfolios. The baseline is what the month view's
 * counting cost before the monthly counts: one GROUP BY over the ledger rows of the range.
 */
export const benchmark: Benchmark = {
  name: 'ledger-growth',
  order: 9,
  async run(size, options) {
    const results: BenchResult[] = [];
    for (const dialect of DIALECTS.filter((candidate) => options?.dialects?.has(candidate) ?? true)) results.push(await ledgerGrowth(dialect, size));
    return results;
  },
};

async function ledgerGrowth(dialect: (typeof DIALECTS)[number], size: BenchSize): Promise<BenchResult> {
  const { portfolios, days } = SIZES[size];
  const from = shiftIsoDate(LEDGER_LAST, -(days - 1));
  const warehouse = await createTempWarehouse(dialect);
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-bench-growth-'));
  try {
    const seedStarted = performance.now();
    await seedLedgerSlices(warehouse, { dialect, portfolios, days, from });
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    // MySQL's answers depend on whether its buffer pool holds the monthly counts' indexes (see docs/warehouse.md).
    const serverNote = dialect === 'mysql' ? `; MariaDB's buffer pool ${await mysqlBufferPoolMb(warehouse)} MB (innodb_buffer_pool_size)` : '';
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
      const output = { stdout: '', stderr: '' };
      const sink = (into?: 'stdout' | 'stderr') =>
        new Writable({
          write(chunk: Buffer | string, _encoding, callback) {
            if (into) output[into] += chunk.toString();
            callback();
          },
        });
      const env = { DATABASE_URL: warehouse.databaseUrl, LOG_LEVEL: 'error' };
      const code = await main(args, { stdout: sink('stdout'), stderr: sink('stderr'), env, cwd: dir, logDestination: sink() });
      if (code > 1) throw new Error(`report-sync ${args.join(' ')} exited ${code}: ${output.stderr.slice(-2000)}`);
      return { code, stdout: output.stdout };
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
        `status and check over all of it, in this process, fastest of ${ASKS}; month view: ${years} years of ${viewPortfolios.length} portfolios; ratio is the slowest ÷ 1 s; seeded in ${seedSeconds.toFixed(0)} s${serverNote}`,
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

/** The MySQL server's InnoDB buffer pool, in MiB. */
async function mysqlBufferPoolMb(warehouse: Awaited<ReturnType<typeof createTempWarehouse>>): Promise<number> {
  const { rows } = await sql<{ bytes: number | string }>`select @@global.innodb_buffer_pool_size as bytes`.execute(warehouse.db);
  return Math.round(Number(rows[0]!.bytes) / 2 ** 20);
}
