import { sql } from 'kysely';
import type { WarehouseHandle } from './open-warehouse.js';

/**
 * The tables report-sync's unqualified names reach, each with its column names, read from the
 * database's catalogue (Kysely's introspection), `kysely_migration` included. Views are left out:
 * nothing can be loaded into one.
 */
export async function readWarehouseTables(warehouse: WarehouseHandle): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
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
