import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAlert } from '../../../../src/alerts/run-alert.js';
import { alertBody } from '../../../../src/alerts/alert-body.js';
import { NO_FAILURES } from '../../../../src/outcomes/failure-groups.js';
import { NO_WARNINGS } from '../../../../src/outcomes/warning-groups.js';
import type { RunReport } from '../../../../src/runner/run-report.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { tallyOutcomes } from '../../../../src/warehouse/ledger/tally-outcomes.js';
import type { SliceChecksRow } from '../../../../src/warehouse/engine/warehouse-schema.js';
import { rowsPerTable } from '../../../../src/reports/rows-per-table.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

const BEFORE = '2024-03-05T00:00:00.000Z';
const SINCE = '2024-03-06T00:00:00.000Z';
const AFTER = '2024-03-06T01:00:00.000Z';

function check(portfolioId: number, reportDate: string, name: string, outcome: 'pass' | 'warn'): SliceChecksRow {
  return {
    portfolio_id: portfolioId,
    report_type: 'constituent.close',
    report_date: reportDate,
    check_name: name,
    severity: outcome === 'pass' ? 'fail' : 'warn',
    outcome,
    measured: 0,
    threshold: 0,
    message: `${name}: ${outcome}`,
    checked_at: AFTER,
  };
}

describe.each(DIALECTS)('what backfill --wait and a queued night count, from the ledger, in %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    await warehouse.db
      .insertInto('report_loads')
      .values([
        // Loaded anew since, its file warned by a check.
        ledgerRow(1001, 'constituent.close', '2024-03-04', 'loaded', { at: AFTER }),
        // Loaded anew since, every check passed.
        ledgerRow(1002, 'constituent.close', '2024-03-04', 'loaded', { at: AFTER }),
        // The same file again: checked since, but its warning is from its earlier load.
        { ...ledgerRow(1003, 'constituent.close', '2024-03-04', 'loaded', { at: BEFORE }), checked_at: AFTER },
        // A failed slice whose earlier file had warned.
        ledgerRow(1004, 'constituent.close', '2024-03-04', 'failed', { at: AFTER }),
      ])
      .execute();
    await warehouse.db
      .insertInto('slice_checks')
      .values([
        check(1001, '2024-03-04', 'weightsSum', 'warn'),
        check(1001, '2024-03-04', 'rowCountDrop', 'warn'),
        check(1002, '2024-03-04', 'weightsSum', 'pass'),
        check(1003, '2024-03-04', 'weightsSum', 'warn'),
        check(1004, '2024-03-04', 'weightsSum', 'warn'),
      ])
      .execute();
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('counts the slices loaded anew whose file a warn check flagged, once each, beside the other outcomes', async () => {
    const outcomes = await new Ledger(warehouse).outcomesSince({ from: '2024-03-01', to: '2024-03-31' }, SINCE);
    const counts = tallyOutcomes(outcomes);
    expect(counts).toMatchObject({ loaded: 3, unchanged: 1, failed: 1, warned: 1, finished: 4 });
  });

  it('counts the same finished slices by status for a wait’s progress, leaving out those checked before and those outside the filter', async () => {
    const ledger = new Ledger(warehouse);
    await warehouse.db
      .insertInto('report_loads')
      .values([
        ledgerRow(1005, 'constituent.close', '2024-03-05', 'no_data', { at: AFTER }),
        ledgerRow(1006, 'constituent.close', '2024-03-05', 'loaded', { at: BEFORE }),
        ledgerRow(1001, 'constituent.close', '2024-04-01', 'loaded', { at: AFTER }),
      ])
      .execute();
    const march = { from: '2024-03-01', to: '2024-03-31' };
    expect(await ledger.finishedSince(march, SINCE)).toEqual({ loaded: 3, noData: 1, failed: 1, finished: 5 });
    expect(await ledger.finishedSince({ ...march, portfolios: [1004] }, SINCE)).toEqual({ loaded: 0, noData: 0, failed: 1, finished: 1 });
    // The same as the summary's own count.
    expect(tallyOutcomes(await ledger.outcomesSince(march, SINCE))).toMatchObject({ loaded: 3, noData: 1, failed: 1, finished: 5 });
  });

  it('groups the warnings of the slices loaded anew by check and portfolio; without a moment, of every slice loaded with warnings', async () => {
    const ledger = new Ledger(warehouse);
    const range = { from: '2024-03-01', to: '2024-03-31' };
    const since = await ledger.warningSummary(range, { loadedSince: SINCE });
    expect(since.slices).toBe(1);
    expect(since.groups.map((group) => [group.check, group.portfolioId, group.slices, group.examples.map((example) => example.slice.reportDate)])).toEqual([
      ['rowCountDrop', 1001, 1, ['2024-03-04']],
      ['weightsSum', 1001, 1, ['2024-03-04']],
    ]);
    const all = await ledger.warningSummary(range);
    expect(all.slices).toBe(2);
    expect(all.groups.map((group) => [group.check, group.portfolioId, group.slices])).toEqual([
      ['weightsSum', 1001, 1],
      ['weightsSum', 1003, 1],
      ['rowCountDrop', 1001, 1],
    ]);
    // What status, check and the dashboard count: loaded slices whose latest file warned (not the failed one).
    expect(await ledger.countWarned(range)).toEqual([
      { portfolioId: 1001, reportType: 'constituent.close', slices: 1 },
      { portfolioId: 1003, reportType: 'constituent.close', slices: 1 },
    ]);
    expect(await ledger.countWarned(range, 'week')).toEqual([
      { portfolioId: 1001, reportType: 'constituent.close', periodStart: '2024-03-04', slices: 1 },
      { portfolioId: 1003, reportType: 'constituent.close', periodStart: '2024-03-04', slices: 1 },
    ]);
  });

  it('puts the count in the summary’s alert when one is sent', async () => {
    const counts = tallyOutcomes(await new Ledger(warehouse).outcomesSince({ from: '2024-03-01', to: '2024-03-31' }, SINCE));
    const report: RunReport = {
      planned: 4,
      ...counts,
      notAttempted: 0,
      bytes: 0,
      failures: NO_FAILURES,
      warnings: NO_WARNINGS,
      stoppedBy: undefined,
      interrupted: false,
      durationMs: 1,
    };
    const alert = runAlert('backfill', 'backfill of 2024-03-04', report);
    expect(alert?.counts).toMatchObject({ loaded: 3, warned: 1, failed: 1 });
    expect(alertBody(alert!, 'slack').text).toContain('3 loaded · 1 loaded with warnings · 1 unchanged');
    // Nothing warned: no count, rather than a zero.
    expect(runAlert('backfill', 'backfill', { ...report, warned: 0, rowsWritten: rowsPerTable() })?.counts).not.toHaveProperty('warned');
  });
});
