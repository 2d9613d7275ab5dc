import { sql, type Kysely } from 'kysely';
import { tablesOf, type CatalogueColumn, type WarehouseTables } from '../engine/warehouse-tables.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * The tables of the schema report-sync's unqualified names reach (`current_schema()`), each with
 * its columns' declared types (`format_type`: `numeric`, `numeric(10,2)`), `kysely_migration`
 * included, views left out. Every schema's tables are in the catalogue: an analyst's copy of
 * `index_report` in another schema must not hide that the one report-sync writes to is gone.
 */
export async function readPostgresTables(db: Kysely<Warehouse>): Promise<WarehouseTables> {
  const { rows } = await sql<CatalogueColumn>`
    select tables.relname as "table", columns.attname as "column", format_type(columns.atttypid, columns.atttypmod) as "type"
    from pg_catalog.pg_class as tables
    join pg_catalog.pg_namespace as schemas on schemas.oid = tables.relnamespace
    join pg_catalog.pg_attribute as columns on columns.attrelid = tables.oid and columns.attnum > 0 and not columns.attisdropped
    where schemas.nspname = current_schema() and tables.relkind in ('r', 'p')`.execute(db);
  return tablesOf(rows);
}

/** `kind name` of every index and view in the schema report-sync's unqualified names reach. */
export async function readPostgresIndexesAndViews(db: Kysely<Warehouse>): Promise<ReadonlySet<string>> {
  const { rows } = await sql<{ kind: string; name: string }>`
    select 'index' as kind, indexname as name from pg_indexes where schemaname = current_schema()
    union all select 'view', viewname from pg_views where schemaname = current_schema()`.execute(db);
  return new Set(rows.map((row) => `${row.kind} ${row.name}`));
}
