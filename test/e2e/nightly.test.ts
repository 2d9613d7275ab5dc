import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planNightly } from '../../src/planning/plan-nightly.js';
import { shiftIsoDate, todayIn, weekdayOf } from '../../src/dates/report-date.js';
import { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { startSyncRig, type SyncRig } from '../helpers/sync-rig.js';
import { ledgerRow } from '../helpers/ledger-row.js';

describe('nightly', () => {
  let rig: SyncRig;
  beforeAll(async () => {
    rig = await startSyncRig({ settings: { schedule: { timeZone: 'Pacific/Auckland', lookbackDays: 3 } } });
  });
  afterAll(async () => {
    await rig.close();
  });

  it('syncs yesterday in the configured time zone plus the whole lookback window on a first night', async () => {
    const result = await rig.cli(['nightly']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('16 slices planned');
    const yesterday = shiftIsoDate(todayIn('Pacific/Auckland'), -1);
    const warehouse = await rig.warehouse();
    const dates = await warehouse.db.selectFrom('report_loads').select('report_date').distinct().orderBy('report_date').execute();
    expect(dates.map((d) => d.report_date)).toEqual([-3, -2, -1, 0].map((offset) => shiftIsoDate(yesterday, offset)));
  });

  it('on the next night re-checks only what is not loaded in the window', async () => {
    const yesterday = shiftIsoDate(todayIn('Pacific/Auckland'), -1);
    const window = [-3, -2, -1].map((offset) => shiftIsoDate(yesterday, offset));
    const weekendDays = window.filter((date) => [0, 6].includes(weekdayOf(date))).length;
    const result = await rig.cli(['nightly']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${4 + 4 * weekendDays} slices planned`);
  });

  it('plans from the ledger: missing, no_data and failed slices of the window, never loaded ones', async () => {
    const warehouse = await rig.warehouse();
    const now = new Date('2024-03-13T12:00:00Z'); // Wednesday: yesterday is Tuesday 12 March
    await warehouse.db
      .insertInto('report_loads')
      .values([
        ledgerRow(1001, 'index', '2024-03-11', 'loaded'),
        ledgerRow(1001, 'index', '2024-03-10', 'no_data'),
        ledgerRow(1001, 'index', '2024-03-09', 'failed', { error: 'UNEXPECTED: x' }),
      ])
      .execute();
    const plan = await planNightly({ ledger: new Ledger(warehouse), portfolios: [1001], reportTypes: ['index'], timeZone: 'UTC', lookbackDays: 3, now });
    expect(plan.reportDate).toBe('2024-03-12');
    expect(plan.slices.map((slice) => slice.reportDate)).toEqual(['2024-03-12', '2024-03-09', '2024-03-10']);
  });
});
