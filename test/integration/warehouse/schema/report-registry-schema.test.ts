import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ColumnKind, ReportDefinition } from '../../../../src/reports/report-definition.js';
import { REPORT_TABLES } from '../../../../src/reports/report-tables.js';
import { rowColumns, tableColumns } from '../../../../src/extract/row-builder.js';
import type { WarehouseDialect } from '../../../../src/warehouse/open-warehouse.js';
import type { WarehouseHandle } from '../../../../src/warehouse/engine/warehouse-engine.js';
import { createTempWarehouse, DIALECTS } from '../../../helpers/temp-warehouse.js';

/*
 * The definitions are the code's word on each report table, the migrations the database's: a fresh
 * warehouse of either dialect, migrated, must have every table as its definition describes it.
 * A new report table whose migration disagrees with its definition fails here, not at its first load.
 */

/** The kinds of the columns every report table has beside its typed ones. */
type FixedKind = 'integer' | 'json' | 'uuid';

/** How the slice's columns, `extra` and `load_id` are typed; the typed columns carry their own kind. */
const FIXED_KINDS: Readonly<Record<string, ColumnKind | FixedKind>> = {
  portfolio_id: 'integer',
  report_type: 'text',
  report_date: 'date',
  line_number: 'integer',
  extra: 'json',
  load_id: 'uuid',
};

/**
 * The catalogue's names for each kind, as the migrations create them (`integer`, `date`, `numeric`,
 * `text`; `extra` is jsonb in Postgres and text holding JSON in SQLite, `load_id` uuid or text).
 */
const CATALOGUE_TYPES: Readonly<Record<WarehouseDialect, Readonly<Record<ColumnKind | FixedKind, string>>>> = {
  sqlite: { integer: 'integer', date: 'date', decimal: 'numeric', text: 'text', json: 'text', uuid: 'text' },
  postgres: { integer: 'int4', date: 'date', decimal: 'numeric', text: 'text', json: 'jsonb', uuid: 'uuid' },
  // MariaDB's JSON is LONGTEXT checked to hold JSON; text that is no key is MEDIUMTEXT (a key's is VARCHAR, see mysql-migrations.ts).
  mysql: { integer: 'int', date: 'date', decimal: 'decimal', text: 'mediumtext', json: 'longtext', uuid: 'char' },
};

/** MySQL's text columns that a key or an index holds: VARCHAR(255), as a TEXT column cannot be a key. */
const MYSQL_KEYED_TEXT: ReadonlySet<string> = new Set(['report_type', 'isin']);

function catalogueType(dialect: WarehouseDialect, name: string, kind: ColumnKind | FixedKind): string {
  return dialect === 'mysql' && kind === 'text' && MYSQL_KEYED_TEXT.has(name) ? 'varchar' : CATALOGUE_TYPES[dialect][kind];
}

interface CatalogueColumn {
  readonly type: string;
  readonly nullable: boolean;
}

/** The table's columns as the database's catalogue has them, by name; undefined when there is no such table. */
async function catalogueColumns(warehouse: WarehouseHandle, table: string): Promise<Map<string, CatalogueColumn> | undefined> {
  const tables = await warehouse.db.introspection.getTables();
  // Kysely lists SQLite's one schema and MySQL's current database only; Postgres's every schema.
  const found = tables.find((candidate) => candidate.name === table && !candidate.isView && (warehouse.engine.dialect !== 'postgres' || candidate.schema === 'public'));
  if (!found) return undefined;
  return new Map(found.columns.map((column) => [column.name, { type: column.dataType.toLowerCase(), nullable: column.isNullable }]));
}

/** The table's primary key columns, in key order. */
async function primaryKey(warehouse: WarehouseHandle, table: string): Promise<string[]> {
  if (warehouse.engine.dialect === 'sqlite') {
    const { rows } = await sql<{ name: string }>`select name from pragma_table_info(${table}) where pk > 0 order by pk`.execute(warehouse.db);
    return rows.map((row) => row.name);
  }
  if (warehouse.engine.dialect === 'mysql') {
    const { rows } = await sql<{ name: string }>`
      select column_name as name from information_schema.key_column_usage
      where table_schema = database() and table_name = ${table} and constraint_name = 'PRIMARY' order by ordinal_position`.execute(warehouse.db);
    return rows.map((row) => row.name);
  }
  const { rows } = await sql<{ name: string }>`
    select usage.column_name as name
    from information_schema.table_constraints as constraints
    join information_schema.key_column_usage as usage
      on usage.constraint_name = constraints.constraint_name and usage.table_schema = constraints.table_schema
    where constraints.table_schema = 'public' and constraints.table_name = ${table} and constraints.constraint_type = 'PRIMARY KEY'
    order by usage.ordinal_position`.execute(warehouse.db);
  return rows.map((row) => row.name);
}

/** The kind each of the table's columns has, in {@link tableColumns} order. */
function expectedKinds(definition: ReportDefinition): [string, ColumnKind | FixedKind][] {
  const typed = new Map(definition.columns.map((column) => [column.name, column.kind]));
  return tableColumns(definition).map((name) => [name, typed.get(name) ?? FIXED_KINDS[name]!]);
}

/** Columns every row must have: the slice's, `line_number`, and the key columns (`load_id` is null on rows older than their ledger's ids). */
function requiredColumns(definition: ReportDefinition): Set<string> {
  const typed = new Set(definition.columns.map((column) => column.name));
  return new Set([
    ...rowColumns(definition).filter((name) => !typed.has(name) && name !== 'extra'),
    ...definition.columns.filter((column) => column.key).map((column) => column.name),
  ]);
}

describe.each(DIALECTS)('every report definition against a freshly migrated warehouse (%s)', (dialect) => {
  let warehouse: WarehouseHandle;
  beforeAll(async () => {
    warehouse = await createTempWarehouse(dialect);
  });
  afterAll(async () => {
    await warehouse?.close();
  });

  it.each(REPORT_TABLES.map((definition) => [definition.table, definition] as const))('%s exists with exactly the definition’s columns', async (table, definition) => {
    const columns = await catalogueColumns(warehouse, table);
    expect(columns, `${table} is not in the migrated warehouse`).toBeDefined();
    // Order is not compared: Postgres adds a migrated column at the end (index_report.line_number).
    expect([...columns!.keys()].sort()).toEqual([...tableColumns(definition)].sort());
  });

  it.each(REPORT_TABLES.map((definition) => [definition.table, definition] as const))('%s types each column as its kind says', async (table, definition) => {
    const columns = (await catalogueColumns(warehouse, table))!;
    const found = expectedKinds(definition).map(([name]) => `${name} ${columns.get(name)?.type}`);
    expect(found).toEqual(expectedKinds(definition).map(([name, kind]) => `${name} ${catalogueType(dialect, name, kind)}`));
  });

  it.each(REPORT_TABLES.map((definition) => [definition.table, definition] as const))(
    '%s refuses null in the slice and key columns, and takes it in every other',
    async (table, definition) => {
      const columns = (await catalogueColumns(warehouse, table))!;
      const required = requiredColumns(definition);
      const found = tableColumns(definition).map((name) => `${name} ${columns.get(name)?.nullable ? 'null' : 'not null'}`);
      expect(found).toEqual(tableColumns(definition).map((name) => `${name} ${required.has(name) ? 'not null' : 'null'}`));
    },
  );

  it.each(REPORT_TABLES.filter((definition) => definition.storesLineNumber).map((definition) => [definition.table, definition] as const))(
    '%s is keyed by its slice columns and line_number, so a slice can never hold its rows twice',
    async (table, definition) => {
      const typed = new Set<string>(definition.columns.map((column) => column.name));
      expect(await primaryKey(warehouse, table)).toEqual(rowColumns(definition).filter((name) => !typed.has(name) && name !== 'extra'));
    },
  );
});
