import type { ReportLoadsRow } from '../engine/warehouse-schema.js';

/**
 * Written as a record of the row type's keys: a column added to {@link ReportLoadsRow} does not
 * compile until it is listed here too, so neither the ledger's writer nor the schema check can
 * fall behind it.
 */
const COLUMNS: { readonly [column in keyof ReportLoadsRow]-?: true } = {
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
  load_id: true,
  loaded_at: true,
};

/** Every column of the ledger (`report_loads`), in table order. */
export const LEDGER_COLUMNS = Object.keys(COLUMNS) as readonly (keyof ReportLoadsRow)[];
