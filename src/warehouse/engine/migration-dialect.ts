import type { ColumnDataType, Migration } from 'kysely';

/**
 * What the migrations need to know of the database they run on, given by its engine. Column types
 * that differ only in name are named here; a migration whose statements differ in kind (a table
 * SQLite must rebuild where Postgres alters it) takes the dialect's own steps from here, kept in
 * the dialect's folder. Never change what a shipped migration's steps create: add the next migration.
 */
export interface MigrationDialect {
  /** A point in time: `timestamptz` (Postgres), ISO 8601 text (SQLite, MySQL). */
  readonly timestampType: ColumnDataType;
  /** A double: `double precision` (Postgres), `real` (SQLite), `double` (MySQL). */
  readonly realType: ColumnDataType;
  /**
   * The steps of 0001-create-tables and 0006-slice-checks where the dialect cannot take the shared
   * ones (MySQL: a TEXT column cannot be a key, a DECIMAL needs its precision); others leave them out.
   */
  readonly createTables?: Migration;
  readonly sliceChecks?: Migration;
  /** The steps of 0003-index-report-line-number (see `indexReportLineNumber`). */
  readonly indexReportLineNumber: Migration;
  /** The steps of 0005-lineage-and-analytics (see `lineageAndAnalytics`). */
  readonly lineageAndAnalytics: Migration;
  /** The steps of 0007-ledger-rollup (see `ledgerRollup`): `report_loads_monthly` and the triggers that keep it. */
  readonly ledgerRollup: Migration;
  /** The steps of 0008-monthly-counts-by-pair (see `monthlyCountsByPair`), where the dialect needs them (MySQL); others have none. */
  readonly monthlyCountsByPair?: Migration;
  /** The steps of 0009-monthly-totals (see `monthlyTotals`), where the dialect needs them (MySQL); others have none. */
  readonly monthlyTotals?: Migration;
}
