import { REPORT_TABLES } from '../reports/report-tables.js';
import { rowColumns } from '../extract/row-builder.js';
import type { ReportLoadsRow, Warehouse } from './warehouse-schema.js';

/**
 * The ledger's columns as a record of the row type's keys: a column added to {@link ReportLoadsRow}
 * does not compile until it is listed here too, so the schema check cannot fall behind the loader.
 */
const LEDGER_COLUMNS: { readonly [column in keyof ReportLoadsRow]-?: true } = {
  portfolio_id: true,
  report_type: true,
  report_date: true,
  status: true,
  row_count: true,
  format: true,
  file_name: true,
  bytes: true,
  content_sha256: true,
  attempts: true,
  error: true,
  error_code: true,
  first_loaded_at: true,
  updated_at: true,
  checked_at: true,
  duration_ms: true,
};

/**
 * Every table report-sync writes, with the columns it writes there, in table order: each report
 * table as its definition's rows have them ({@link rowColumns}), then the ledger.
 */
export function writtenColumns(): ReadonlyMap<keyof Warehouse, readonly string[]> {
  return new Map<keyof Warehouse, readonly string[]>([
    ...REPORT_TABLES.map((definition) => [definition.table, rowColumns(definition)] as const),
    ['report_loads', Object.keys(LEDGER_COLUMNS)],
  ]);
}
