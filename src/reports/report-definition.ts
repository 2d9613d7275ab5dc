/** How a value of a report column is typed on its way into the warehouse. */
export type ColumnKind =
  /** YYYY-MM-DD calendar date. */
  | 'date'
  /** Exact decimal, kept as its source text (NUMERIC in SQL). */
  | 'decimal'
  | 'text';

/** A column the spec lists, under its normalised (snake_case) name. */
export interface ReportColumn {
  readonly name: string;
  readonly kind: ColumnKind;
  /** A key column must be in every file and non-empty in every record. */
  readonly key?: boolean;
}

/** The warehouse tables that hold report rows. */
export type ReportTableName = 'index_report' | 'constituent_report';

/**
 * Everything the pipeline needs to know about one report table. Each report type maps to one
 * definition; adding a report table means writing one of these, its row type and a migration.
 */
export interface ReportDefinition {
  readonly table: ReportTableName;
  /** Whether rows carry `report_type` (several report types share the table). */
  readonly storesReportType: boolean;
  /** Whether rows carry `line_number`, their 1-based position among the file's records. */
  readonly storesLineNumber: boolean;
  /** The typed columns, in the spec's order; fields not listed here go to `extra`. */
  readonly columns: readonly ReportColumn[];
}
