import { Migrator, sql, type Kysely } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { createTables } from '../../../../src/warehouse/schema/migrations/0001-create-tables.js';
import { ledgerErrorCode } from '../../../../src/warehouse/schema/migrations/0002-ledger-error-code.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { createTempDatabase, DIALECTS, migrationNamesFrom } from '../../../helpers/temp-warehouse.js';

describe.each(DIALECTS)('migrating a warehouse made by the previous release (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  let drop: (() => Promise<void>) | undefined;
  const migrationsOf = (opened: WarehouseHandle | undefined) => opened!.engine.migrations;
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
    const previous = new Migrator({ db: warehouse.db, provider: { getMigrations: async () => ({ '0001-create-tables': createTables(migrationsOf(warehouse)) }) } });
    expect((await previous.migrateToLatest()).error).toBeUndefined();
    const common = {
      report_type: 'index',
      row_count: 0,
      format: null,
      file_name: null,
      bytes: null,
      content_sha256: null,
      attempts: 1,
      first_loaded_at: null,
      updated_at: '2024-01-02T00:00:00.000Z',
      checked_at: '2024-01-02T00:00:00.000Z',
    };
    const rows = [
      { ...common, portfolio_id: 1, report_date: '2024-01-01', status: 'loaded', row_count: 3, error: null },
      { ...common, portfolio_id: 2, report_date: '2024-01-01', status: 'failed', error: 'EXPORT_FORBIDDEN: 403 for portfolio 2' },
      { ...common, portfolio_id: 3, report_date: '2024-01-01', status: 'failed', error: 'something without a code' },
    ];
    const db = warehouse.db as unknown as import('kysely').Kysely<{ report_loads: Record<string, unknown> }>;
    await db.insertInto('report_loads').values(rows).execute();

    const { applied } = await migrateWarehouse(warehouse);
    expect(applied).toEqual(migrationNamesFrom('0002-ledger-error-code'));
    const after = await warehouse.db.selectFrom('report_loads').select(['portfolio_id', 'status', 'row_count', 'error', 'error_code']).orderBy('portfolio_id').execute();
    expect(after).toEqual([
      { portfolio_id: 1, status: 'loaded', row_count: 3, error: null, error_code: null },
      { portfolio_id: 2, status: 'failed', row_count: 0, error: 'EXPORT_FORBIDDEN: 403 for portfolio 2', error_code: 'EXPORT_FORBIDDEN' },
      { portfolio_id: 3, status: 'failed', row_count: 0, error: 'something without a code', error_code: 'UNEXPECTED' },
    ]);
    expect((await migrateWarehouse(warehouse)).applied).toEqual([]);
  });

  it('gives index_report line numbers in stored order and a primary key, keeping every row', async () => {
    const database = await createTempDatabase(dialect);
    drop = database.drop;
    warehouse = await openWarehouse(database.databaseUrl);
    const previous = new Migrator({
      db: warehouse.db,
      provider: { getMigrations: async () => ({ '0001-create-tables': createTables(migrationsOf(warehouse)), '0002-ledger-error-code': ledgerErrorCode() }) },
    });
    expect((await previous.migrateToLatest()).error).toBeUndefined();
    const db = warehouse.db as unknown as Kysely<{ index_report: Record<string, unknown> }>;
    const indexRow = (portfolio: number, date: string, id: string) => ({
      portfolio_id: portfolio,
      report_date: date,
      effective_date: date,
      index_id: id,
      index_name: null,
      index_value: '1.5',
      currency: 'EUR',
      close_market_value: null,
      open_market_value: null,
      close_divisor: null,
      open_divisor: null,
      extra: null,
    });
    // Slice 1/2024-01-01 as two processes used to leave it: loaded twice over.
    await db
      .insertInto('index_report')
      .values([
        indexRow(1, '2024-01-01', 'B'),
        indexRow(1, '2024-01-01', 'A'),
        indexRow(2, '2024-01-01', 'C'),
        indexRow(1, '2024-01-01', 'B'),
        indexRow(1, '2024-01-01', 'A'),
        indexRow(1, '2024-01-02', 'D'),
      ])
      .execute();

    const { applied } = await migrateWarehouse(warehouse);
    expect(applied).toEqual(migrationNamesFrom('0003-index-report-line-number'));
    const after = await db
      .selectFrom('index_report')
      .select(['portfolio_id', 'report_date', 'line_number', 'index_id'])
      .orderBy('portfolio_id')
      .orderBy('report_date')
      .orderBy('line_number')
      .execute();
    expect(after.map((row) => `${row.portfolio_id} ${String(row.report_date).slice(0, 10)} ${row.line_number} ${row.index_id}`)).toEqual([
      '1 2024-01-01 1 B',
      '1 2024-01-01 2 A',
      '1 2024-01-01 3 B',
      '1 2024-01-01 4 A',
      '1 2024-01-02 1 D',
      '2 2024-01-01 1 C',
    ]);
    // A second copy of a row is now impossible by construction.
    await expect(
      db
        .insertInto('index_report')
        .values({ ...indexRow(2, '2024-01-01', 'C'), line_number: 1 })
        .execute(),
    ).rejects.toThrow(/unique|duplicate|UNIQUE/i);
    // The primary key serves the slice's lookups; nothing else indexes the same columns.
    if (dialect === 'postgres') {
      const indexes = await sql<{ indexname: string }>`select indexname from pg_indexes where tablename = 'index_report' order by indexname`.execute(warehouse.db);
      expect(indexes.rows.map((row) => row.indexname)).toEqual(['index_report_pk']);
    }
  });
});

describe.each(DIALECTS)('a migration that fails (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  let drop: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await warehouse?.close();
    await drop?.();
    warehouse = drop = undefined;
  });

  it('is said in its own words, and every migration of the run is rolled back', async () => {
    const database = await createTempDatabase(dialect);
    drop = database.drop;
    warehouse = await openWarehouse(database.databaseUrl);
    await migrateWarehouse(warehouse);
    // Its history loses its rows from 0005 on while the tables stay: 0005 finds what it adds already there.
    const history = warehouse.db as unknown as Kysely<{ kysely_migration: { name: string } }>;
    await history
      .deleteFrom('kysely_migration')
      .where('name', 'in', ['0005-lineage-and-analytics', '0006-slice-checks', '0007-ledger-rollup', '0008-monthly-counts-by-pair', '0009-monthly-totals'])
      .execute();
    const failure = await migrateWarehouse(warehouse).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    expect(failure?.code).toBe('CONFIG_INVALID');
    expect(failure?.message).toMatch(/^applying migration 0005-lineage-and-analytics to .* failed: .*(already exists|duplicate column).* seems to have had it already/i);
    const names = (await history.selectFrom('kysely_migration').select('name').orderBy('name').execute()).map((row) => row.name);
    expect(names).toEqual(['0001-create-tables', '0002-ledger-error-code', '0003-index-report-line-number', '0004-ledger-duration']);
  });
});
