import { sql, type Kysely } from 'kysely';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * The tables of the schema report-sync's unqualified names reach (`current_schema()`), each with
 * its column names, `kysely_migration` included, views left out. Kysely's introspection lists every
 * schema's tables: an analyst's copy of `index_report` in another schema must not hide that the one
 * report-sync writes to is gone.
 */
export async function readPostgresTables(db: Kysely<Warehouse>): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  const schema = (await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)).rows[0]?.schema ?? null;
  const found = new Map<string, ReadonlySet<string>>();
  for (const table of tables) {
    if (table.isView || table.schema !== schema) continue;
    found.set(table.name, new Set(table.columns.map((column) => column.name)));
  }
  return found;
}

/** `kind name` of every index and view in the schema report-sync's unqualified names reach. */
export async function readPostgresIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>> {
  const { rows } = await sql<{ kind: string; name: string }>`
    select 'index' as kind, indexname as name from pg_indexes where schemaname = current_schema()
    union all select 'view', viewname from pg_views where schemaname = current_schema()`.execute(db);
  return new Set(rows.map((row) => `${row.kind} ${row.name}`));
}
