import { sql, type RawBuilder } from 'kysely';

/**
 * An index of report-sync's (see `analytics-objects.ts`), as the engines create it: each dialect
 * says it its own way (`WarehouseEngine.createIndex`), since only some have partial indexes.
 */
export interface IndexDefinition {
  readonly name: string;
  readonly table: string;
  readonly columns: readonly string[];
  readonly unique?: boolean;
  /** Only the rows whose `column` is `equals` (a partial index), where the dialect has them. */
  readonly where?: { readonly column: string; readonly equals: string };
}

/**
 * `create index if not exists`: `partial`, with the definition's `where` (SQLite, Postgres); or,
 * for a dialect with no partial index (MySQL), with the `where` column leading the index, so the
 * rows it would hold are still one range of it.
 */
export function createIndexIfMissing(index: IndexDefinition, options: { readonly partial: boolean }): RawBuilder<unknown> {
  const { where } = index;
  const columns = !options.partial && where ? [where.column, ...index.columns] : index.columns;
  const filter = options.partial && where ? sql` where ${sql.ref(where.column)} = ${sql.lit(where.equals)}` : sql``;
  return sql`create ${sql.raw(index.unique === true ? 'unique ' : '')}index if not exists ${sql.id(index.name)} on ${sql.table(index.table)} (${sql.join(
    columns.map((column) => sql.ref(column)),
  )})${filter}`;
}
