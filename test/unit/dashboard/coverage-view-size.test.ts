import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coverageView, type CoverageDefaults } from '../../../src/dashboard/coverage-view.js';
import type { DashboardQuery } from '../../../src/dashboard/dashboard-query.js';
import { UsageError } from '../../../src/errors/sync-error.js';
import { shiftIsoDate, todayIn } from '../../../src/dates/report-date.js';
import { Ledger, type LedgerFilter, type LedgerPeriodCount } from '../../../src/warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../../../src/warehouse/engine/ledger-period.js';
import { ledgerRow } from '../../helpers/ledger-row.js';
import { createTempWarehouse } from '../../helpers/temp-warehouse.js';

/*
 * A coverage grid's size is known from its parameters before the ledger is counted: a query over
 * the limit is coarsened (no period asked) or refused with the count, the limit and how to narrow,
 * in arithmetic, without counting the ledger or making a cell. A century by day would otherwise
 * fill the dashboard's heap before the limit was checked.
 */

/** The ledger, with the per-period counts it was asked for written down. */
class WatchedLedger extends Ledger {
  readonly counted: LedgerPeriod[] = [];
  override async countByPeriod(filter: LedgerFilter, period: LedgerPeriod): Promise<LedgerPeriodCount[]> {
    this.counted.push(period);
    return super.countByPeriod(filter, period);
  }
}

const defaults: CoverageDefaults = { portfolios: [1001, 1002], reportTypes: ['index', 'constituent.close'], timeZone: 'UTC', lookbackDays: 7, earliest: '2000-01-01' };
const yesterday = shiftIsoDate(todayIn('UTC'), -1);

describe('the size of a coverage grid, known before it is counted', () => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeAll(async () => {
    warehouse = await createTempWarehouse('sqlite');
    await warehouse.db
      .insertInto('report_loads')
      .values([
        ledgerRow(1001, 'index', yesterday, 'loaded'),
        ledgerRow(1002, 'constituent.close', shiftIsoDate(yesterday, -3), 'failed'),
        ledgerRow(1001, 'index', '2016-03-01', 'loaded'),
        // A pair beyond the settings' (a portfolio since dropped): the grid shows it, so it counts.
        ledgerRow(1003, 'index', shiftIsoDate(yesterday, -1), 'no_data'),
      ])
      .execute();
  });
  afterAll(async () => {
    await warehouse.close();
  });

  async function sized(query: DashboardQuery) {
    const ledger = new WatchedLedger(warehouse);
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    const outcome = await coverageView({ ledger, query, defaults }).then(
      (view) => ({ view, error: undefined }),
      (error: unknown) => ({ view: undefined, error }),
    );
    return { ...outcome, ms: performance.now() - started, heapMb: (process.memoryUsage().heapUsed - heapBefore) / 1e6, counted: ledger.counted };
  }

  it('refuses a century by day at once, with the cells, the limit and how to narrow, without counting the ledger', async () => {
    const { error, ms, heapMb, counted } = await sized({ from: '0100-01-01', to: '9999-12-31', period: 'day' });
    expect(error).toBeInstanceOf(UsageError);
    // Refused on the 4 pairs asked alone: by month too (118,800 months) it is more than fits.
    // The message says how to narrow the view: checked whole.
    expect((error as Error).message).toBe(
      '14,463,600 cells (4 rows by 3,615,900 days from 0100-01-01 to 9999-12-31) is more than one page shows (150,000); choose fewer dates or fewer portfolios and report types',
    );
    expect(counted).toEqual([]);
    expect(ms).toBeLessThan(1000);
    expect(heapMb).toBeLessThan(20);
  });

  it('coarsens a grid with no period asked to what fits, counting the ledger once, at that period', async () => {
    // 200 rows: by day (the page has room for the 1,826 columns) 365,200 cells; by week 52,400.
    const portfolios = Array.from({ length: 100 }, (_, i) => 1001 + i);
    const coarsened = await sized({ from: '2021-01-01', to: '2025-12-31', columns: 2000, portfolios });
    expect(coarsened.error).toBeUndefined();
    expect(coarsened.view!.period).toBe('week');
    expect(coarsened.view!.rows).toHaveLength(200);
    expect(coarsened.view!.columns).toHaveLength(262);
    expect(coarsened.counted).toEqual(['week']);
    expect(coarsened.ms).toBeLessThan(3000);
  });

  it('refuses an explicit period that does not fit, rather than coarsening it behind the query', async () => {
    const { error, counted } = await sized({ from: '2000-01-01', to: '2026-10-31', period: 'week', portfolios: Array.from({ length: 60 }, (_, i) => 1001 + i) });
    expect(counted).toEqual([]);
    // The message says how to narrow the view: checked whole.
    expect((error as Error).message).toBe(
      '168,120 cells (120 rows by 1,401 weeks from 2000-01-01 to 2026-10-31) is more than one page shows (150,000); choose a coarser period (period=month fits), fewer dates or fewer portfolios and report types',
    );
  });

  it('still draws the ordinary grids: the last 90 days by day, and ten years by month', async () => {
    const recent = await sized({ columns: 120 });
    expect(recent.error).toBeUndefined();
    expect(recent.view).toMatchObject({ period: 'day', to: yesterday, from: shiftIsoDate(yesterday, -89) });
    expect(recent.view!.columns).toHaveLength(90);
    expect(recent.view!.rows.map((row) => `${row.portfolioId} ${row.reportType}`)).toEqual([
      '1001 constituent.close',
      '1001 index',
      '1002 constituent.close',
      '1002 index',
      '1003 index',
    ]);
    expect(recent.view!.totals).toMatchObject({ loaded: 1, failed: 1, no_data: 1 });

    const decade = await sized({ from: '2016-01-01', to: '2025-12-31', period: 'month' });
    expect(decade.error).toBeUndefined();
    expect(decade.view!.columns).toHaveLength(120);
    expect(decade.view!.rows).toHaveLength(4);
    expect(decade.view!.totals.loaded).toBe(1);
    expect(decade.counted).toEqual(['month']);
  });
});
