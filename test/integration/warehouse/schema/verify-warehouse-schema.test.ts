import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { REPORT_TABLES } from '../../../../src/reports/report-tables.js';
import { rowColumns } from '../../../../src/extract/row-builder.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { verifyWarehouseSchema } from '../../../../src/warehouse/schema/verify-warehouse-schema.js';
import { writtenColumns } from '../../../../src/warehouse/schema/written-columns.js';
import { ledgerRow } from '../../../helpers/ledger-row.js';
import type { WarehouseDialect as Dialect } from '../../../../src/warehouse/open-warehouse.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

describe('the columns the code writes', () => {
  it('are each report definition’s row columns and load_id, then every column of the ledger row', () => {
    const written = writtenColumns();
    for (const definition of REPORT_TABLES) expect(written.get(definition.table)).toEqual([...rowColumns(definition), 'load_id']);
    expect(written.get('report_loads')).toEqual(Object.keys(ledgerRow(1, 'index', '2024-03-01', 'loaded')));
    expect([...written.keys()]).toEqual([...REPORT_TABLES.map((definition) => definition.table), 'report_loads', 'slice_checks']);
    expect([...written.keys()].slice(0, 2)).toEqual(['index_report', 'constituent_report']);
  });
});

describe.each(DIALECTS)('verifyWarehouseSchema (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  async function migrated(): Promise<WarehouseHandle> {
    warehouse = await createTempWarehouse(dialect);
    return warehouse;
  }

  /**
   * A migrated warehouse whose analysts' views are gone, as a DBA must drop them before dropping
   * the tables or columns they read (Postgres refuses otherwise; SQLite refuses any later ALTER).
   */
  async function migratedWithoutViews(): Promise<WarehouseHandle> {
    const migratedWarehouse = await migrated();
    await dropViews(migratedWarehouse);
    return migratedWarehouse;
  }

  it('finds nothing missing in a migrated warehouse: the migrations make what the code writes', async () => {
    expect(await verifyWarehouseSchema(await migrated())).toBeUndefined();
  });

  it('leaves tables and columns the code does not write alone', async () => {
    const { db } = await migrated();
    await sql`alter table index_report add column analyst_note text`.execute(db);
    await sql`create table analyst_notes (note text)`.execute(db);
    expect(await verifyWarehouseSchema(warehouse!)).toBeUndefined();
  });

  it('lists every missing table and column, as a fatal CONFIG_INVALID saying how to repair', async () => {
    const { db } = await migratedWithoutViews();
    await sql`drop table constituent_report`.execute(db);
    await sql`alter table index_report drop column index_name`.execute(db);
    await sql`alter table report_loads drop column error_code`.execute(db);
    const damage = await verifyWarehouseSchema(warehouse!);
    expect(damage?.code).toBe('CONFIG_INVALID');
    expect(damage?.fatal).toBe(true);
    // Every missing object named, in one sentence, is what is checked.
    expect(damage?.message).toContain(
      `the warehouse at ${warehouse!.location} lacks index_report.index_name (column), constituent_report (table), report_loads.error_code (column), which report-sync writes`,
    );
    expect(damage?.message).toContain('report-sync migrate cannot re-create them');
    expect(damage?.message).toContain('Restore the warehouse from a backup');
  });

  it('names the loaded slices whose rows a lost table held, as the run that loads them again', async () => {
    const { db } = await migratedWithoutViews();
    await db
      .insertInto('report_loads')
      .values([
        ledgerRow(7, 'index', '2024-03-01', 'loaded'),
        ledgerRow(3, 'index', '2024-03-04', 'loaded'),
        // Neither held rows, nor do the constituent slices live in index_report.
        ledgerRow(3, 'index', '2024-03-09', 'no_data'),
        ledgerRow(3, 'index', '2024-02-01', 'failed'),
        ledgerRow(3, 'constituent.close', '2024-01-01', 'loaded'),
      ])
      .execute();
    await sql`drop table index_report`.execute(db);
    const damage = await verifyWarehouseSchema(warehouse!);
    expect(damage?.message).toContain('lacks index_report (table), which report-sync writes');
    // The command is what the user copies: checked whole.
    expect(damage?.message).toContain(
      'load the 2 slices its ledger lists as loaded there again: report-sync run --from 2024-03-01 --to 2024-03-04 --portfolios 3,7 --report-types index (the run finds their rows gone and loads each file again)',
    );
  });

  it('asks for --force when a column was lost: its rows are all there, so a plain run would skip them', async () => {
    const { db } = await migratedWithoutViews();
    await db
      .insertInto('report_loads')
      .values([ledgerRow(3, 'constituent.close', '2024-01-01', 'loaded'), ledgerRow(3, 'index', '2024-01-02', 'loaded')])
      .execute();
    await sql`alter table constituent_report drop column security_name`.execute(db);
    // What is missing, and what to do about it, is the point of this message: checked whole.
    expect((await verifyWarehouseSchema(warehouse!))?.message).toContain(
      'lacks constituent_report.security_name (column), which report-sync writes, so no slice can be loaded into it; report-sync migrate cannot re-create it',
    );
    // The command is what the user copies: checked whole.
    expect((await verifyWarehouseSchema(warehouse!))?.message).toContain(
      'load the 1 slice its ledger lists as loaded there again: report-sync run --from 2024-01-01 --to 2024-01-01 --portfolios 3 --report-types constituent.close --force (--force, because',
    );
  });

  it.each(ROUNDING_TYPES[dialect])('names a decimal column re-declared as %s, which rounds, with its repair and a --force reload', async (type) => {
    const { db } = await migratedWithoutViews();
    await db
      .insertInto('report_loads')
      .values([ledgerRow(3, 'constituent.close', '2024-01-01', 'loaded'), ledgerRow(3, 'index', '2024-01-02', 'loaded')])
      .execute();
    await redeclare(warehouse!, 'constituent_report', 'closing_price', type);
    const damage = await verifyWarehouseSchema(warehouse!);
    expect(damage?.code).toBe('CONFIG_INVALID');
    // What is wrong, how to repair it and what to load again are the point of this message: checked whole.
    expect(damage?.message).toContain(
      `the warehouse at ${warehouse!.location} has decimal column of a type that would round what report-sync loads: constituent_report.closing_price (${type}); ` +
        `report-sync's migrations declare ${warehouse!.engine.decimalColumn.declared}, which keeps every value exactly. ` +
        `Restore the warehouse from a backup; or ${warehouse!.engine.decimalColumn.repair('constituent_report', 'closing_price')}; then `,
    );
    // Its rows are all there, rounded: only --force loads their files again.
    expect(damage?.message).toContain(
      'load the 1 slice its ledger lists as loaded there again: report-sync run --from 2024-01-01 --to 2024-01-01 --portfolios 3 --report-types constituent.close --force (--force, because',
    );
  });

  it.each(KEEPING_TYPES[dialect])('leaves a decimal column re-declared as %s alone: it keeps every value loaded', async (type) => {
    await migratedWithoutViews();
    await redeclare(warehouse!, 'index_report', 'index_value', type);
    expect(await verifyWarehouseSchema(warehouse!)).toBeUndefined();
  });

  it('names a missing column and a rounding one in one message, with both repairs', async () => {
    const { db } = await migratedWithoutViews();
    await sql`alter table constituent_report drop column security_name`.execute(db);
    await redeclare(warehouse!, 'index_report', 'index_value', ROUNDING_TYPES[dialect][0]!);
    const message = (await verifyWarehouseSchema(warehouse!))?.message;
    expect(message).toContain(
      `lacks constituent_report.security_name (column), which report-sync writes, so no slice can be loaded into it; report-sync migrate cannot re-create it, ` +
        `as kysely_migration records every migration as applied; it also has decimal column of a type that would round what report-sync loads: index_report.index_value (${ROUNDING_TYPES[dialect][0]})`,
    );
    expect(message).toContain(`re-create what is missing as src/warehouse/migrations/ define it; ${warehouse!.engine.decimalColumn.repair('index_report', 'index_value')}; then `);
  });

  it('says nothing needs loading again when the ledger lists no loaded slice of the lost table', async () => {
    const { db } = await migratedWithoutViews();
    await db
      .insertInto('report_loads')
      .values(ledgerRow(3, 'constituent.open', '2024-01-01', 'loaded'))
      .execute();
    await sql`drop table index_report`.execute(db);
    expect((await verifyWarehouseSchema(warehouse!))?.message).toContain('its ledger lists no loaded slice whose rows were lost');
  });

  it('without slice_checks, says it is missing and that no slice needs loading again', async () => {
    const { db } = await migrated();
    await sql`drop table slice_checks`.execute(db);
    const damage = await verifyWarehouseSchema(warehouse!);
    expect(damage?.message).toContain('lacks slice_checks (table)');
    expect(damage?.message).toContain('no slice needs loading again');
  });

  it('without a ledger, says every day must be loaded again', async () => {
    const { db } = await migratedWithoutViews();
    await sql`drop table report_loads`.execute(db);
    const damage = await verifyWarehouseSchema(warehouse!);
    expect(damage?.message).toContain('lacks report_loads (table)');
    expect(damage?.message).toContain('report-sync run --from <first day> --to <last day>');
  });
});

describe('verifyWarehouseSchema (postgres schemas)', () => {
  let warehouse: WarehouseHandle | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  it('is not fooled by a table of the same name in another schema', async () => {
    warehouse = await createTempWarehouse('postgres');
    const { db } = warehouse;
    await sql`create schema analysts`.execute(db);
    await sql`create table analysts.index_report as table index_report`.execute(db);
    await dropViews(warehouse);
    await sql`drop table public.index_report`.execute(db);
    expect((await verifyWarehouseSchema(warehouse))?.message).toContain('lacks index_report (table)');
  });
});

async function dropViews(warehouse: WarehouseHandle): Promise<void> {
  for (const view of ['latest_constituent_report', 'latest_index_report', 'latest_loaded_day']) await sql`drop view ${sql.table(view)}`.execute(warehouse.db);
}

describe.each(DIALECTS.filter((dialect) => dialect !== 'sqlite'))('the decimal columns’ repair (%s)', (dialect) => {
  let warehouse: WarehouseHandle | undefined;
  afterEach(async () => {
    await warehouse?.close();
    warehouse = undefined;
  });

  it('is a statement that gives every rounding column back the type the migrations declare', async () => {
    warehouse = await createTempWarehouse(dialect);
    await dropViews(warehouse);
    const rule = warehouse.engine.decimalColumn;
    for (const column of ['closing_price', 'index_weighting']) await redeclare(warehouse, 'constituent_report', column, ROUNDING_TYPES[dialect][0]!);
    expect((await verifyWarehouseSchema(warehouse))?.message).toContain('constituent_report.closing_price');
    for (const column of ['closing_price', 'index_weighting']) await sql.raw(rule.repair('constituent_report', column)).execute(warehouse.db);
    expect(await verifyWarehouseSchema(warehouse)).toBeUndefined();
  });
});

/** Declared types of a decimal column that round some value report-sync loads (as each catalogue writes them). */
const ROUNDING_TYPES: Record<Dialect, readonly string[]> = {
  sqlite: ['real', 'double precision'],
  postgres: ['numeric(10,2)', 'double precision', 'numeric(1000,20)'],
  mysql: ['decimal(10,2)', 'double', 'decimal(65,20)'],
};

/** Declared types that keep them: the migrations' own, and SQLite's affinities that round no more. */
const KEEPING_TYPES: Record<Dialect, readonly string[]> = {
  sqlite: ['numeric', 'decimal(10,2)', 'text', 'integer', 'floating point'],
  postgres: ['numeric'],
  mysql: ['decimal(65,30)'],
};

/** Gives `table`.`column` the declared type `type`, as a DBA would (SQLite cannot alter a type: dropped and added again). */
async function redeclare(warehouse: WarehouseHandle, table: string, column: string, type: string): Promise<void> {
  const { db } = warehouse;
  const statements: Record<Dialect, string[]> = {
    sqlite: [`alter table ${table} drop column ${column}`, `alter table ${table} add column ${column} ${type}`],
    postgres: [`alter table ${table} alter column ${column} type ${type}`],
    mysql: [`alter table ${table} modify ${column} ${type}`],
  };
  for (const statement of statements[warehouse.engine.dialect as Dialect]) await sql.raw(statement).execute(db);
}
