import { sql, type Kysely } from 'kysely';
import { tablesOf, type CatalogueColumn, type WarehouseTables } from '../engine/warehouse-tables.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * The base tables of the database the connection uses (`database()`), each with its columns' declared types,
 * `kysely_migration` included, views left out: another database's `index_report` is not the one
 * report-sync writes to.
 */
export async function readMysqlTables(db: Kysely<Warehouse>): Promise<WarehouseTables> {
  const { rows } = await sql<CatalogueColumn>`
    select columns.table_name as \`table\`, columns.column_name as \`column\`, lower(columns.column_type) as \`type\`
    from information_schema.columns as columns
    join information_schema.tables as tables on tables.table_schema = columns.table_schema and tables.table_name = columns.table_name
    where columns.table_schema = database() and tables.table_type = 'BASE TABLE'`.execute(db);
  return tablesOf(rows);
}

/** `kind name` of every index (primary keys aside) and view of the database the connection uses. */
export async function readMysqlIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>> {
  const { rows } = await sql<{ kind: string; name: string }>`
    select distinct 'index' as kind, index_name as name from information_schema.statistics where table_schema = database() and index_name <> 'PRIMARY'
    union all select 'view', table_name from information_schema.views where table_schema = database()`.execute(db);
  return new Set(rows.map((row) => `${row.kind} ${row.name}`));
}
