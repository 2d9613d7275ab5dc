import type { SliceChecksRow } from '../engine/warehouse-schema.js';

/** Written as a record of the row type's keys, as `LEDGER_COLUMNS` is: a column added to the row type must be listed. */
const CHECK_COLUMNS: { readonly [column in keyof SliceChecksRow]-?: true } = {
  portfolio_id: true,
  report_type: true,
  report_date: true,
  check_name: true,
  severity: true,
  outcome: true,
  measured: true,
  threshold: true,
  message: true,
  checked_at: true,
};

/** Every column of the ledger's data-quality checks (`slice_checks`), in table order. */
export const SLICE_CHECK_COLUMNS = Object.keys(CHECK_COLUMNS) as readonly (keyof SliceChecksRow)[];
