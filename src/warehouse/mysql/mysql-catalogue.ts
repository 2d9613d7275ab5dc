import { sql, type Kysely } from 'kysely';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * The base tables of the database the connection uses (`database()`), each with its column names,
 * `kysely_migration` included, views left out: another database's `index_report` is not the one
 * report-sync writes to.
 */
export async function readMysqlTables(db: Kysely<Warehouse>): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select columns.table_name as table_name, columns.column_name as column_name
    from information_schema.columns as columns
    join information_schema.tables as tables on tables.table_schema = columns.table_schema and tables.table_name = columns.table_name
    where columns.table_schema = database() and tables.table_type = 'BASE TABLE'`.execute(db);
  const found = new Map<string, Set<string>>();
  for (const row of rows) {
    let columns = found.get(row.table_name);
    if (columns === undefined) {
      columns = new Set();
      found.set(row.table_name, columns);
    }
    columns.add(row.column_name);
  }
  return found;
}

/** `kind name` of every index (primary keys aside) and view of the database the connection uses. */
export async function readMysqlIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>> {
  const { rows } = await sql<{ kind: string; name: string }>`
    select distinct 'index' as kind, index_name as name from information_schema.statistics where table_schema = database() and index_name <> 'PRIMARY'
    union all select 'view', table_name from information_schema.views where table_schema = database()`.execute(db);
  return new Set(rows.map((row) => `${row.kind} ${row.name}`));
}
