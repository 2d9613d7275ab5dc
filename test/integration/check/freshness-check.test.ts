import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkFreshness } from '../../../src/check/freshness-check.js';
import { eachIsoDate } from '../../../src/dates/report-date.js';
import type { ReportType } from '../../../src/reports/report-types.js';
import type { SliceStatus } from '../../../src/warehouse/engine/warehouse-schema.js';
import { Ledger } from '../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../helpers/temp-warehouse.js';

/*
 * The freshness check counts a range by month and reads slice by slice only the pairs short in
 * the months with gaps. What it finds missing must be what planning every slice of the range and
 * looking each one up in the ledger finds, wherever the gaps are.
 */

const PORTFOLIOS = [1001, 1002, 1003, 1004];
const REPORT_TYPES: ReportType[] = ['index', 'constituent.close', 'constituent.open'];
const RANGE = { from: '2024-01-20', to: '2024-04-10', portfolios: PORTFOLIOS, reportTypes: REPORT_TYPES };

/** The seeded state of a slice: gaps in February for one pair, across March's end for another, one in a partial month. */
function seeded(portfolioId: number, reportType: string, date: string): SliceStatus | undefined {
  if (portfolioId === 1002 && reportType === 'constituent.close' && date >= '2024-02-10' && date <= '2024-02-12') return undefined;
  if (portfolioId === 1003 && reportType === 'index' && date >= '2024-03-28' && date <= '2024-04-02') return undefined;
  if (portfolioId === 1004 && reportType === 'constituent.open' && date === '2024-01-25') return undefined;
  if (portfolioId === 1001 && date === '2024-03-15') return 'failed';
  return date.endsWith('6') ? 'no_data' : 'loaded';
}

describe.each(DIALECTS)('the freshness check on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('finds every missing slice, grouped per pair, wherever the gaps are', async () => {
    const rows = [];
    const missing: string[] = [];
    for (const date of eachIsoDate(RANGE.from, RANGE.to)) {
      for (const portfolioId of PORTFOLIOS) {
        for (const reportType of REPORT_TYPES) {
          const status = seeded(portfolioId, reportType, date);
          if (status) rows.push(ledgerRow(portfolioId, reportType, date, status));
          else missing.push(`${portfolioId} ${reportType} ${date}`);
        }
      }
    }
    for (let i = 0; i < rows.length; i += 500)
      await warehouse.db
        .insertInto('report_loads')
        .values(rows.slice(i, i + 500))
        .execute();
    const result = await checkFreshness({ ledger: new Ledger(warehouse), range: RANGE, graceUntil: new Date(0) });

    expect(result.status).toBe('failed');
    expect(result.missing).toBe(missing.length);
    expect(result.loaded + result.noData + result.failed).toBe(rows.length);
    expect(result.failed).toBe(REPORT_TYPES.length);
    // Oldest first, then portfolio and report type as the range lists them: as planning the range gives them.
    expect(result.missingExamples.map((slice) => `${slice.portfolioId} ${slice.reportType} ${slice.reportDate}`)).toEqual(missing);
    expect(result.missingGroups).toEqual([
      { portfolioId: 1002, reportType: 'constituent.close', slices: 3, firstDate: '2024-02-10', lastDate: '2024-02-12' },
      { portfolioId: 1003, reportType: 'index', slices: 6, firstDate: '2024-03-28', lastDate: '2024-04-02' },
      { portfolioId: 1004, reportType: 'constituent.open', slices: 1, firstDate: '2024-01-25', lastDate: '2024-01-25' },
    ]);
  });

  it('finds a whole night missing for every pair, and nothing when nothing is', async () => {
    const ledger = new Ledger(warehouse);
    const night = { ...RANGE, from: '2024-04-10', to: '2024-04-10' };
    const empty = await checkFreshness({ ledger, range: night, graceUntil: new Date(0) });
    expect(empty.missing).toBe(PORTFOLIOS.length * REPORT_TYPES.length);
    expect(empty.missingGroups).toHaveLength(PORTFOLIOS.length * REPORT_TYPES.length);
    await warehouse.db
      .insertInto('report_loads')
      .values(PORTFOLIOS.flatMap((portfolioId) => REPORT_TYPES.map((reportType) => ledgerRow(portfolioId, reportType, night.to, 'loaded'))))
      .execute();
    const full = await checkFreshness({ ledger, range: night, graceUntil: new Date(0) });
    expect(full).toMatchObject({ status: 'ok', loaded: PORTFOLIOS.length * REPORT_TYPES.length, missing: 0, missingGroups: [] });
  });
});
