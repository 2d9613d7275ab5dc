/** A warehouse's tables, each with its columns' declared types as its catalogue writes them (lower case). */
export type WarehouseTables = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** One column of a catalogue query: its table, its name and its declared type. */
export interface CatalogueColumn {
  readonly table: string;
  readonly column: string;
  readonly type: string;
}

/** The catalogue's rows, grouped by table. */
export function tablesOf(rows: readonly CatalogueColumn[]): WarehouseTables {
  const found = new Map<string, Map<string, string>>();
  for (const row of rows) {
    let columns = found.get(row.table);
    if (columns === undefined) {
      columns = new Map();
      found.set(row.table, columns);
    }
    columns.set(row.column, row.type);
  }
  return found;
}
