import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../../src/errors/sync-error.js';
import { constituentReport } from '../../../../src/reports/constituent-report.js';
import { rowColumns, type RowValues, type WarehouseRow } from '../../../../src/extract/row-builder.js';
import type { Slice } from '../../../../src/slice/slice.js';
import { Ledger } from '../../../../src/warehouse/ledger/ledger.js';
import { SliceLoader } from '../../../../src/warehouse/loading/slice-loader.js';
import type { SliceLock } from '../../../../src/warehouse/engine/slice-lock.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';
import { constituentRow, LOADED_FILE, LOADED_SLICE, rowStream } from '../../../helpers/constituent-row.js';

const slice = LOADED_SLICE;
const file = LOADED_FILE;
const row = (line: number, price: string) => constituentRow(line, price);
const rows = rowStream;

describe.each(DIALECTS)('SliceLoader on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  let loader: SliceLoader;
  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    loader = new SliceLoader({ warehouse, batchRows: 2 });
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('loads rows and the ledger row together, in batches', async () => {
    const count = await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '10.5'), row(2, '2'), row(3, '300')), file, attempts: 1 });
    expect(count).toBe(3);
    const ledger = await new Ledger(warehouse).row(slice);
    expect(ledger).toMatchObject({ status: 'loaded', row_count: 3, content_sha256: 'abc', attempts: 1, error: null });
    expect(ledger?.first_loaded_at).toBeTruthy();
  });

  it('tells its onUpkeepError of upkeep that failed after the commit; the slice is loaded', async () => {
    const told: unknown[] = [];
    const sliceLock: SliceLock = {
      begin: (connection, options) => warehouse.sliceLock.begin(connection, options),
      lock: (connection, lockSlice, wait) => warehouse.sliceLock.lock(connection, lockSlice, wait),
      afterCommit: async () => Promise.reject(new Error('fold refused')),
    };
    const upkept = new SliceLoader({ warehouse: { ...warehouse, sliceLock }, onUpkeepError: (error) => told.push(error) });
    expect(await upkept.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '10.5')), file, attempts: 1 })).toBe(1);
    expect(told).toEqual([new Error('fold refused')]);
    expect(await new Ledger(warehouse).row(slice)).toMatchObject({ status: 'loaded', row_count: 1 });
  });

  it('stamps the ledger row with the warehouse clock, as ISO 8601 UTC with milliseconds, when the slice is written', async () => {
    const before = Date.now();
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '10.5')), file, attempts: 1 });
    const after = Date.now();
    const ledger = await new Ledger(warehouse).row(slice);
    const stamps = [ledger?.updated_at, ledger?.checked_at, ledger?.loaded_at, ledger?.first_loaded_at].map(String);
    for (const stamp of stamps) {
      expect(stamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // The Postgres server on this machine shares its clock; a millisecond either side for rounding.
      expect(Date.parse(stamp)).toBeGreaterThanOrEqual(before - 1);
      expect(Date.parse(stamp)).toBeLessThanOrEqual(after + 1);
    }
    expect(new Set(stamps).size).toBe(1);
  });

  it('stores decimals so that SQL compares and sums them as numbers', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '10.5'), row(2, '2'), row(3, '300')), file, attempts: 1 });
    const result = await sql<{ total: number; top: number; bigger: number }>`
      select sum(closing_price) as total,
             (select closing_price from constituent_report order by closing_price desc limit 1) as top,
             (select count(*) from constituent_report where closing_price > 9) as bigger
      from constituent_report`.execute(warehouse.db);
    const sums = result.rows[0]!;
    expect([Number(sums.total), Number(sums.top), Number(sums.bigger)]).toEqual([312.5, 300, 2]);
  });

  it('replaces a restated slice whole: rows gone upstream are gone', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1'), row(2, '2'), row(3, '3')), file, attempts: 1 });
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '9')), file: { ...file, sha256: 'def' }, attempts: 1 });
    const stored = await warehouse.db.selectFrom('constituent_report').select(['line_number', 'closing_price']).execute();
    expect(stored.map((r) => [r.line_number, Number(r.closing_price)])).toEqual([[1, 9]]);
  });

  it('writes nothing of a file whose rows fail midway, and keeps the earlier rows', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1'), row(2, '2')), file, attempts: 1 });
    async function* broken(): AsyncGenerator<WarehouseRow> {
      yield row(1, '5');
      yield row(2, '6');
      yield row(3, '7');
      throw new FileFormatError('bad record 4');
    }
    await expect(loader.replaceRows({ slice, definition: constituentReport, rows: broken(), file: { ...file, sha256: 'new' }, attempts: 1 })).rejects.toThrow('bad record 4');
    const stored = await warehouse.db.selectFrom('constituent_report').select('closing_price').orderBy('line_number').execute();
    expect(stored.map((r) => Number(r.closing_price))).toEqual([1, 2]);
    expect((await new Ledger(warehouse).row(slice))?.content_sha256).toBe('abc');
  });

  it('records a failure without touching loaded rows or their facts', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1')), file, attempts: 1 });
    await loader.recordFailure(slice, 'EXPORT_FORBIDDEN: nope', { attempts: 1 });
    const ledger = await new Ledger(warehouse).row(slice);
    expect(ledger).toMatchObject({ status: 'failed', error: 'EXPORT_FORBIDDEN: nope', row_count: 1, content_sha256: 'abc' });
    expect(await warehouse.db.selectFrom('constituent_report').select('isin').execute()).toHaveLength(1);
  });

  it('records no data and removes the slice rows', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1')), file, attempts: 1 });
    await loader.recordNoData(slice, constituentReport, 'csv', 2);
    expect(await new Ledger(warehouse).row(slice)).toMatchObject({ status: 'no_data', row_count: 0, attempts: 2, error: null });
    expect(await warehouse.db.selectFrom('constituent_report').select('isin').execute()).toHaveLength(0);
  });

  it('keeps other slices of the same table untouched', async () => {
    const other: Slice = { ...slice, reportType: 'constituent.open' };
    await loader.replaceRows({ slice: other, definition: constituentReport, rows: rows({ ...row(1, '1'), report_type: 'constituent.open' }), file, attempts: 1 });
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '2')), file, attempts: 1 });
    await loader.recordNoData(slice, constituentReport, 'csv', 1);
    const stored = await warehouse.db.selectFrom('constituent_report').select('report_type').execute();
    expect(stored).toEqual([{ report_type: 'constituent.open' }]);
  });
});

describe.each(DIALECTS)('SliceLoader, small slices, on %s', (dialect) => {
  let warehouse: Awaited<ReturnType<typeof createTempWarehouse>>;
  /** Transactions begun, and which were small. */
  let begun: boolean[];
  let loader: SliceLoader;
  const columns = rowColumns(constituentReport);
  async function* values(...items: WarehouseRow[]): AsyncGenerator<RowValues> {
    for (const item of items) yield columns.map((column) => item[column] ?? null);
  }
  const held = async () => (await warehouse.db.selectFrom('constituent_report').select('line_number').execute()).length;

  beforeEach(async () => {
    warehouse = await createTempWarehouse(dialect);
    begun = [];
    const sliceLock: SliceLock = {
      begin: (connection, options) => {
        begun.push(options?.small === true);
        return warehouse.sliceLock.begin(connection, options);
      },
      lock: (connection, lockSlice, wait) => warehouse.sliceLock.lock(connection, lockSlice, wait),
    };
    loader = new SliceLoader({ warehouse: { ...warehouse, sliceLock }, batchRows: 500 });
  });
  afterEach(async () => {
    await warehouse.close();
  });

  it('replaces a slice holding few rows in a small transaction', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1'), row(2, '2'), row(3, '3')), file, attempts: 1 });
    const load = await loader.loadExport({
      slice,
      definition: constituentReport,
      rows: values(row(1, '9')),
      file: { ...file, sha256: 'def' },
      attempts: 2,
      source: { heldInMemory: true, compressed: false },
    });
    expect([load.rowCount, await held()]).toEqual([1, 1]);
    expect(begun).toEqual([false, dialect === 'sqlite']);
  });

  it('hands a slice holding more than 10,000 rows back from a small transaction, before it writes, and replaces it in one that is not', async () => {
    const many = Array.from({ length: 10_001 }, (_, i) => row(i + 1, '1'));
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(...many), file, attempts: 1 });
    const load = await loader.loadExport({
      slice,
      definition: constituentReport,
      rows: values(row(1, '9'), row(2, '8')),
      file: { ...file, sha256: 'def' },
      attempts: 2,
      source: { heldInMemory: true, compressed: false },
    });
    expect([load.rowCount, await held()]).toEqual([2, 2]);
    expect(await new Ledger(warehouse).row(slice)).toMatchObject({ status: 'loaded', row_count: 2, content_sha256: 'def', attempts: 2 });
    // SQLite: the small transaction, then the one that is not; Postgres has no small transactions.
    expect(begun).toEqual(dialect === 'sqlite' ? [false, true, false] : [false, false]);
  });

  it('records an empty answer that replaces a big slice in a transaction that is not small', async () => {
    await loader.replaceRows({ slice, definition: constituentReport, rows: rows(...Array.from({ length: 10_001 }, (_, i) => row(i + 1, '1'))), file, attempts: 1 });
    const record = await loader.recordEmptyAnswer({ slice, definition: constituentReport, format: 'csv', attempts: 2, acceptRestatement: true });
    expect(record).toEqual({ kind: 'recorded' });
    expect(await held()).toBe(0);
    expect(begun).toEqual(dialect === 'sqlite' ? [false, true, false] : [false, false]);
  });
});

describe('decimals in Postgres', () => {
  it('round-trip every one of 20 significant digits', async () => {
    const warehouse = await createTempWarehouse('postgres');
    try {
      const loader = new SliceLoader({ warehouse });
      await loader.replaceRows({ slice, definition: constituentReport, rows: rows(row(1, '1234.56789012345678901'), row(2, '-0.00000000000000000012345')), file, attempts: 1 });
      const stored = await warehouse.db.selectFrom('constituent_report').select('closing_price').orderBy('line_number').execute();
      expect(stored.map((r) => r.closing_price)).toEqual(['1234.56789012345678901', '-0.00000000000000000012345']);
      const dates = await warehouse.db.selectFrom('report_loads').select(['report_date', 'updated_at', 'bytes']).execute();
      expect(dates[0]).toMatchObject({ report_date: '2024-03-01', bytes: 10 });
      expect(dates[0]!.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    } finally {
      await warehouse.close();
    }
  });
});
