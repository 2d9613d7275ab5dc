import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

/*
 * The first and last dates the ledger holds: the dashboard's default range ends at the last, and
 * its "all the ledger holds" link starts at the first. Asked on every answer, each end is its own
 * subquery (an index seek, where min and max in one query read every ledger row).
 */

describe.each(DIALECTS)('the dates the ledger holds, in %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('is none for an empty ledger, else its first and last dates, within the portfolios and report types asked, as the slices come and go', async () => {
    const ledger = new Ledger(warehouse);
    expect(await ledger.dateSpan()).toBeUndefined();
    await warehouse.db
      .insertInto('report_loads')
      .values([
        ledgerRow(1001, 'index', '2024-01-02', 'loaded'),
        ledgerRow(1001, 'index', '2024-06-30', 'no_data'),
        ledgerRow(1002, 'index', '2023-12-31', 'failed'),
        ledgerRow(1001, 'constituent.close', '2025-02-01', 'loaded'),
      ])
      .execute();
    expect(await ledger.dateSpan()).toEqual({ from: '2023-12-31', to: '2025-02-01' });
    expect(await ledger.dateSpan({ portfolios: [1001] })).toEqual({ from: '2024-01-02', to: '2025-02-01' });
    expect(await ledger.dateSpan({ portfolios: [1001], reportTypes: ['index'] })).toEqual({ from: '2024-01-02', to: '2024-06-30' });
    expect(await ledger.dateSpan({ portfolios: [1003] })).toBeUndefined();
    // A month whose last slice is deleted is no longer an end (its monthly count is gone or nets to nought).
    await warehouse.db.deleteFrom('report_loads').where('report_date', '=', '2023-12-31').execute();
    await warehouse.db.deleteFrom('report_loads').where('report_date', '=', '2025-02-01').execute();
    expect(await ledger.dateSpan()).toEqual({ from: '2024-01-02', to: '2024-06-30' });
    expect(await ledger.dateSpan({ portfolios: [1002] })).toBeUndefined();
  });
});
