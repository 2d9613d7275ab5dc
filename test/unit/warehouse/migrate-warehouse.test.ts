import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateWarehouse } from '../../../src/warehouse/migrate-warehouse.js';
import { createTables } from '../../../src/warehouse/migrations/0001-create-tables.js';
import { openWarehouse, type WarehouseHandle } from '../../../src/warehouse/open-warehouse.js';
import { createTempDatabase, DIALECTS } from '../../helpers/temp-warehouse.js';

describe.each(DIALECTS)('migrating a warehouse made by the previous release (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await warehouse?.close();
    await drop?.();
    warehouse = drop = undefined;
  });

  it('adds the ledger error code, filled in from each failure, and loses nothing', async () => {
    const database = await createTempDatabase(dialect);
    drop = database.drop;
    warehouse = await openWarehouse(database.databaseUrl);
    // The warehouse as release 0.1.0 left it: the first migration only, with a loaded and two failed slices.
    const previous = new Migrator({ db: warehouse.db, provider: { getMigrations: async () => ({ '0001-create-tables': createTables(dialect) }) } });
    expect((await previous.migrateToLatest()).error).toBeUndefined();
    const common = { report_type: 'index', row_count: 0, format: null, file_name: null, bytes: null, content_sha256: null, attempts: 1, first_loaded_at: null, updated_at: '2024-01-02T00:00:00.000Z', checked_at: '2024-01-02T00:00:00.000Z' };
    const rows = [
      { ...common, portfolio_id: 1, report_date: '2024-01-01', status: 'loaded', row_count: 3, error: null },
      { ...common, portfolio_id: 2, report_date: '2024-01-01', status: 'failed', error: 'EXPORT_FORBIDDEN: 403 for portfolio 2' },
      { ...common, portfolio_id: 3, report_date: '2024-01-01', status: 'failed', error: 'something without a code' },
    ];
    const db = warehouse.db as unknown as import('kysely').Kysely<{ report_loads: Record<string, unknown> }>;
    await db.insertInto('report_loads').values(rows).execute();

    const { applied } = await migrateWarehouse(warehouse);
    expect(applied).toEqual(['0002-ledger-error-code']);
    const after = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'status', 'row_count', 'error', 'error_code']).orderBy('portfolio_id').execute();
    expect(after).toEqual([
      { portfolio_id: 1, status: 'loaded', row_count: 3, error: null, error_code: null },
      { portfolio_id: 2, status: 'failed', row_count: 0, error: 'EXPORT_FORBIDDEN: 403 for portfolio 2', error_code: 'EXPORT_FORBIDDEN' },
      { portfolio_id: 3, status: 'failed', row_count: 0, error: 'something without a code', error_code: 'UNEXPECTED' },
    ]);
    expect((await migrateWarehouse(warehouse)).applied).toEqual([]);
  });
});
