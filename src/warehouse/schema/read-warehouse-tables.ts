import { sql } from 'kysely';
import type { WarehouseHandle } from '../open-warehouse.js';

/**
 * The tables report-sync's unqualified names reach, each with its column names, read from the
 * database's catalogue (Kysely's introspection), `kysely_migration` included. Views are left out:
 * nothing can be loaded into one.
 */
export async function readWarehouseTables(warehouse: WarehouseHandle): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
  if (warehouse.dialect === 'sqlite') return readSqliteTables(warehouse);
  const tables = await warehouse.db.introspection.getTables({ withInternalKyselyTables: true });
  // Postgres: the introspection lists every schema's tables; an analyst's copy of `index_report` in
  // another schema must not hide that the one report-sync writes to is gone.
  const schema =
    warehouse.dialect === 'postgres' ? ((await sql<{ schema: string | null }>`select current_schema() as schema`.execute(warehouse.db)).rows[0]?.schema ?? null) : undefined;
  const found = new Map<string, ReadonlySet<string>>();
  for (const table of tables) {
    if (table.isView || (schema !== undefined && table.schema !== schema)) continue;
    found.set(table.name, new Set(table.columns.map((column) => column.name)));
  }
  return found;
}

/**
 * SQLite's tables and their columns, read from its catalogue directly: Kysely's introspection also
 * reads every view's columns, which fails outright once a table a view reads is gone (a view of
 * migration 0005 over a dropped `index_report`): the very damage this read must be able to name.
 */
async function readSqliteTables(warehouse: WarehouseHandle): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
  const { rows } = await sql<{ table: string; column: string }>`
    select tables.name as "table", columns.name as "column"
    from sqlite_master as tables join pragma_table_info(tables.name) as columns
    where tables.type = 'table' and substr(tables.name, 1, 7) <> 'sqlite_'`.execute(warehouse.db);
  const found = new Map<string, Set<string>>();
  for (const row of rows) {
    let columns = found.get(row.table);
    if (columns === undefined) {
      columns = new Set();
      found.set(row.table, columns);
    }
    columns.add(row.column);
  }
  return found;
}
