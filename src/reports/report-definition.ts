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
  /**
   * A text column that names a thing (an ISIN, an index id): stored trimmed of every Unicode
   * space (a no-break space too) and in Unicode NFC, so `XS0000000001 ` and `XS0000000001` are
   * one value to the checks (`duplicateIsin`), to joins and to GROUP BY. Other text is kept as sent.
   */
  readonly identifier?: boolean;
}

/**
 * Everything the pipeline knows about one report table: its columns, from which the row type, the
 * Kysely schema and the tally are derived. Write it `as const satisfies ReportDefinition`, so names,
 * flags and columns keep their literal types for those derivations.
 */
export interface ReportDefinition {
  readonly table: string;
  /** Whether rows carry `report_type` (several report types share the table). */
  readonly storesReportType: boolean;
  /** Whether rows carry `line_number`, their 1-based position among the file's records. */
  readonly storesLineNumber: boolean;
  /** The typed columns, in the spec's order; fields not listed here go to `extra`. */
  readonly columns: readonly ReportColumn[];
  /** Which columns the data-quality checks look at; a check with no column here does not apply. */
  readonly checks: ReportChecks;
}

/**
 * The columns each data-quality check reads in a report table's rows (each a name of `columns`).
 * The row-count check applies to every table.
 */
export interface ReportChecks {
  /** The weights that sum to 1 (or 100) over a file (`weightsSum`). */
  readonly weightColumn?: string;
  /** The column no two rows of a file share (`duplicateIsin`). */
  readonly uniqueColumn?: string;
  /** The date each row is effective at, the report date or a few business days before (`effectiveDate`). */
  readonly effectiveDateColumn?: string;
  /** Decimals that must be above zero where given (`positiveValues`). */
  readonly positiveColumns: readonly string[];
}
