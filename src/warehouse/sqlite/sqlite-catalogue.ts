import { sql, type Kysely } from 'kysely';
import { tablesOf, type CatalogueColumn, type WarehouseTables } from '../engine/warehouse-tables.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * SQLite's tables and their columns with each one's declared type (lower case), read from its catalogue directly: Kysely's introspection also
 * reads every view's columns, which fails outright once a table a view reads is gone (a view of
 * migration 0005 over a dropped `index_report`): the very damage this read must be able to name.
 */
export async function readSqliteTables(db: Kysely<Warehouse>): Promise<WarehouseTables> {
  const { rows } = await sql<CatalogueColumn>`
    select tables.name as "table", columns.name as "column", lower(columns.type) as "type"
    from sqlite_master as tables join pragma_table_info(tables.name) as columns
    where tables.type = 'table' and substr(tables.name, 1, 7) <> 'sqlite_'`.execute(db);
  return tablesOf(rows);
}

/** `kind name` of every index and view of the SQLite warehouse. */
export async function readSqliteIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>> {
  const { rows } = await sql<{ kind: string; name: string }>`select type as kind, name from sqlite_master where type in ('index', 'view')`.execute(db);
  return new Set(rows.map((row) => `${row.kind} ${row.name}`));
}
