import { sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReportType } from '../../src/reports/report-types.js';
import { lazySyntheticReport } from '../../src/simulator/synthetic-reports.js';
import type { Warehouse } from '../../src/warehouse/engine/warehouse-schema.js';
import { startCliProcess } from '../helpers/cli-process.js';
import { startQueueRig, type QueueRig } from '../helpers/queue-rig.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';
import { until } from '../helpers/until.js';

/*
 * Several processes load the same slices at once: cron `run`s over overlapping ranges, two
 * operators, a `run` beside a worker. Each slice is written by one process at a time (the slice's
 * lock), so whatever the interleaving: no row twice, the ledger's row_count equal to the rows the
 * table holds for each slice, and no slice failed by the race.
 */

const PORTFOLIOS = [1001, 1002];
const REPORT_TYPES: ReportType[] = ['index', 'constituent.close'];
// Slices big enough that two loads of one slice overlap in time.
const SIZES = { indexRecords: 3_000, constituentRows: 4_000 };

/** Every slice of the range, with the rows the simulator serves for it. */
function servedSlices(dates: string[]) {
  return dates.flatMap((date) =>
    PORTFOLIOS.flatMap((portfolioId) =>
      REPORT_TYPES.map((reportType) => ({ portfolioId, reportType, date, rows: lazySyntheticReport({ portfolioId, reportType, reportDate: date }, { sizes: SIZES }).rowCount })),
    ),
  );
}

/** Each slice's table rows, distinct rows and ledger row, on either dialect. */
async function sliceCounts(db: Kysely<Warehouse>) {
  const { rows } = await sql<{
    portfolio_id: number;
    report_type: string;
    report_date: string;
    status: string;
    row_count: number;
    error: string | null;
    held: number | string;
    distinct_rows: number | string;
  }>`
    select l.portfolio_id, l.report_type, l.report_date, l.status, l.row_count, l.error,
           coalesce(i.held, c.held, 0) as held, coalesce(i.distinct_rows, c.distinct_rows, 0) as distinct_rows
    from report_loads l
    left join (
      select portfolio_id, report_date, count(*) as held,
             count(distinct concat_ws('|', index_id, coalesce(index_name, ''), index_value)) as distinct_rows
      from index_report group by portfolio_id, report_date
    ) i on l.report_type = 'index' and i.portfolio_id = l.portfolio_id and i.report_date = l.report_date
    left join (
      select portfolio_id, report_type, report_date, count(*) as held, count(distinct isin) as distinct_rows
      from constituent_report group by portfolio_id, report_type, report_date
    ) c on l.report_type = c.report_type and c.portfolio_id = l.portfolio_id and c.report_date = l.report_date
    order by l.portfolio_id, l.report_type, l.report_date`.execute(db);
  return rows.map((row) => ({ ...row, report_date: String(row.report_date).slice(0, 10), held: Number(row.held), distinct_rows: Number(row.distinct_rows) }));
}

async function expectEverySliceOnce(db: Kysely<Warehouse>, dates: string[]) {
  const served = servedSlices(dates);
  const counts = await sliceCounts(db);
  expect(counts).toHaveLength(served.length);
  for (const slice of served) {
    const row = counts.find((r) => r.portfolio_id === slice.portfolioId && r.report_type === slice.reportType && r.report_date === slice.date);
    expect(row, `${slice.portfolioId} ${slice.reportType} ${slice.date}`).toMatchObject({
      status: 'loaded',
      error: null,
      row_count: slice.rows,
      held: slice.rows,
      distinct_rows: slice.rows,
    });
  }
}

const DATES = ['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-04'];

describe.each(DIALECTS)('several processes loading overlapping ranges into one %s warehouse', (dialect) => {
  let rig: SyncRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('writes each slice once: no duplicate row, ledger counts equal table counts, nothing failed by the race', async () => {
    rig = await startSyncRig({ dialect, simulator: SIZES, settings: { concurrency: 4 } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    const ranges: [string, string, ...string[]][] = [
      ['2024-01-01', '2024-01-04'],
      ['2024-01-02', '2024-01-04'],
      ['2024-01-01', '2024-01-03'],
      // Forced loads replace slices the others are loading or have just loaded.
      ['2024-01-01', '2024-01-04', '--force'],
      ['2024-01-03', '2024-01-04', '--force'],
    ];
    const runs = ranges.map(([from, to, ...flags]) => startCliProcess(['run', '--from', from, '--to', to, ...flags], { cwd: rig!.dir, env: rig!.env }));
    const codes = await Promise.all(runs.map((run) => run.exited));
    for (const [i, run] of runs.entries()) {
      expect(codes[i], run.output()).toBe(0);
      expect(run.stdout()).toMatch(/failed\s+0/);
    }
    await expectEverySliceOnce((await rig.warehouse()).db, DATES);
    // Every process fetched its whole range: the overlap really was loaded several times over.
    expect(rig.simulator.counters.exportRequests).toBeGreaterThanOrEqual(ranges.length * 4);
  }, 120_000);
});

describe('a run beside a worker (Postgres, queue mode)', () => {
  let rig: QueueRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('the worker and the run load the same slices without a duplicate or a failure', async () => {
    rig = await startQueueRig({ simulator: SIZES, settings: { concurrency: 4 } });
    expect((await rig.cli(['migrate'])).code).toBe(0);
    const worker = rig.startWorker();
    await rig.ready(worker);
    const queued = await rig.cli(['backfill', '--from', DATES[0]!, '--to', DATES.at(-1)!, '--force']);
    expect(queued.code, queued.stderr).toBe(0);
    const run = startCliProcess(['run', '--from', DATES[0]!, '--to', DATES.at(-1)!, '--force'], { cwd: rig.dir, env: rig.env });
    expect(await run.exited, run.output()).toBe(0);
    expect(run.stdout()).toMatch(/failed\s+0/);
    await until(
      async () => {
        const counts = await rig!.queueCounts();
        // The nightly job scheduler keeps its next run delayed: only the slices are waited for.
        return counts.completed >= DATES.length * 4 && counts.active + counts.waiting + counts.prioritized === 0;
      },
      60_000,
      'the worker to finish the backfill',
    );
    expect((await rig.queueCounts()).failed).toBe(0);
    await expectEverySliceOnce((await rig.warehouse()).db, DATES);
  }, 120_000);
});
