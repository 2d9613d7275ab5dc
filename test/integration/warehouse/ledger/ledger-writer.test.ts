import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Slice } from '../../../../src/slice/slice.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

describe.each(DIALECTS)('LedgerWriter.readWithPrevious on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    await warehouse.db
      .insertInto('report_loads')
      .values([
        { ...ledgerRow(1001, 'index', '2024-03-01', 'loaded'), row_count: 40 },
        ledgerRow(1001, 'index', '2024-03-04', 'failed'),
        ledgerRow(1001, 'index', '2024-03-05', 'no_data'),
        ledgerRow(1001, 'index', '2024-03-06', 'failed'),
        { ...ledgerRow(1001, 'index', '2024-03-07', 'loaded'), row_count: 42 },
        // Other portfolios and report types are not its history.
        ledgerRow(1002, 'index', '2024-03-05', 'loaded'),
        ledgerRow(1001, 'constituent.close', '2024-03-05', 'loaded'),
      ])
      .execute();
  });
  afterEach(async () => {
    await warehouse.close();
  });

  const slice = (reportDate: string): Slice => ({ portfolioId: 1001, reportType: 'index', reportDate });

  it.each([
    ['2024-03-06', 'failed', { reportDate: '2024-03-01', rowCount: 40 }],
    ['2024-03-07', 'loaded', { reportDate: '2024-03-01', rowCount: 40 }],
    ['2024-03-08', undefined, { reportDate: '2024-03-07', rowCount: 42 }],
    ['2024-03-01', 'loaded', undefined],
    ['2024-02-29', undefined, undefined],
  ])('for %s: the slice’s own row (%s) and the latest loaded date before it, as read and previousLoad give them apart', async (date, status, previous) => {
    const writer = new Ledger(warehouse).writer;
    const together = await writer.readWithPrevious(warehouse.db, slice(date));
    expect(together.row?.status).toBe(status);
    expect(together.previous).toEqual(previous);
    expect(together.row).toEqual(await writer.read(warehouse.db, slice(date)));
    expect(together.previous).toEqual(await writer.previousLoad(warehouse.db, slice(date)));
  });
});
