import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateWarehouse } from '../../../../src/warehouse/schema/migrate-warehouse.js';
import { openWarehouse } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { readMigrationHistory } from '../../../../src/warehouse/schema/read-migration-history.js';
import { createTempDatabase, createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

const KNOWN = ['0002-b', '0001-a', '0003-c'];

describe.each(DIALECTS)('readMigrationHistory (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  /** A warehouse with report-sync's tables whose kysely_migration lists `rows` (name, timestamp). */
  async function withHistory(rows: [string, string][]): Promise<WarehouseHandle> {
    warehouse = await createTempWarehouse(dialect);
    await sql`delete from kysely_migration`.execute(warehouse.db);
    const db = warehouse.db as unknown as import('kysely').Kysely<{ kysely_migration: { name: string; timestamp: string } }>;
    if (rows.length > 0)
      await db
        .insertInto('kysely_migration')
        .values(rows.map(([name, timestamp]) => ({ name, timestamp })))
        .execute();
    return warehouse;
  }

  it('a sound history: what is recorded, in Kysely’s order, and what is pending', async () => {
    const history = await readMigrationHistory(
      await withHistory([
        ['0002-b', '2024-01-02T00:00:00.000Z'],
        ['0001-a', '2024-01-01T00:00:00.000Z'],
      ]),
      KNOWN,
    );
    expect(history).toEqual({ recorded: ['0001-a', '0002-b'], pending: ['0003-c'], damage: undefined });
  });

  it('an empty database has nothing to be damaged: everything is pending', async () => {
    const database = await createTempDatabase(dialect);
    const opened = await openWarehouse(database.databaseUrl);
    warehouse = {
      ...opened,
      close: async () => {
        await opened.close();
        await database.drop();
      },
    };
    expect(await readMigrationHistory(warehouse, KNOWN)).toEqual({ recorded: [], pending: ['0001-a', '0002-b', '0003-c'], damage: undefined });
  });

  it('names a migration this version does not know, and the row to delete if it was edited', async () => {
    const history = await readMigrationHistory(
      await withHistory([
        ['0001-a', '2024-01-01T00:00:00.000Z'],
        ['0009-z', '2024-01-02T00:00:00.000Z'],
      ]),
      KNOWN,
    );
    expect(history.damage?.code).toBe('CONFIG_INVALID');
    expect(history.damage?.message).toContain('(table kysely_migration) is damaged');
    expect(history.damage?.message).toContain('it lists 0009-z, which this version of report-sync does not know');
    expect(history.damage?.message).toContain('(it knows 0001-a, 0002-b, 0003-c)');
    expect(history.damage?.message).toContain("delete from kysely_migration where name in ('0009-z')");
  });

  it('names a migration missing before a later one, with the row that puts it back in its place', async () => {
    const history = await readMigrationHistory(
      await withHistory([
        ['0001-a', '2024-01-01T00:00:00.000Z'],
        ['0003-c', '2024-01-03T00:00:00.000Z'],
      ]),
      KNOWN,
    );
    expect(history.damage?.message).toContain('it lacks 0002-b, though it lists the later 0003-c, so the table was edited');
    expect(history.damage?.message).toContain("insert into kysely_migration (name, timestamp) values ('0002-b', '2024-01-03T00:00:00.000Z')");
  });

  it('names timestamps that put the migrations out of order', async () => {
    const history = await readMigrationHistory(
      await withHistory([
        ['0001-a', '2024-01-02T00:00:00.000Z'],
        ['0002-b', '2024-01-01T00:00:00.000Z'],
      ]),
      KNOWN,
    );
    expect(history.damage?.code).toBe('CONFIG_INVALID');
    expect(history.damage?.message).toContain('in the order 0002-b, 0001-a, not the order they run in (0001-a, 0002-b)');
  });

  it('an emptied history beside complete tables: the rows that record every migration', async () => {
    const history = await readMigrationHistory(await withHistory([]), KNOWN);
    expect(history.damage?.message).toContain("is empty, though the warehouse has report-sync's tables (index_report, constituent_report, report_loads, slice_checks)");
    expect(history.damage?.message).toMatch(/insert into kysely_migration \(name, timestamp\) values \('0001-a', '([^']+)'\), \('0002-b', '\1'\), \('0003-c', '\1'\)/);
  });

  it('the real migrations, after migrateWarehouse: sound, nothing pending; a dry run changes nothing', async () => {
    warehouse = await createTempWarehouse(dialect);
    expect(await migrateWarehouse(warehouse, { dryRun: true })).toEqual({ applied: [], pending: [] });
    await sql`delete from kysely_migration where name = '0001-create-tables'`.execute(warehouse.db);
    await expect(migrateWarehouse(warehouse, { dryRun: true })).rejects.toThrow(/it lacks 0001-create-tables, though it lists the later 0009-monthly-totals/);
    await expect(migrateWarehouse(warehouse)).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('it lacks 0001-create-tables') });
  });
});
