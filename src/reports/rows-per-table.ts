import type { ReportTableName } from './report-registry.js';
import { REPORT_TABLES } from './report-tables.js';

/** A count of rows for every report table, in {@link REPORT_TABLES} order. */
export type RowsPerTable = Record<ReportTableName, number>;

/** A tally of rows per report table, every one at 0. */
export function rowsPerTable(): RowsPerTable {
  return Object.fromEntries(REPORT_TABLES.map((definition) => [definition.table, 0])) as RowsPerTable;
}
