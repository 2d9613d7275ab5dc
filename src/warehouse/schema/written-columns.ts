import { REPORT_TABLES } from '../../reports/report-tables.js';
import { tableColumns } from '../../extract/row-builder.js';
import { LEDGER_COLUMNS } from './ledger-columns.js';
import { SLICE_CHECK_COLUMNS } from './slice-check-columns.js';
import type { Warehouse } from '../engine/warehouse-schema.js';

/**
 * Every table report-sync writes, with the columns it writes there, in table order: each report
 * table as its row writers write them ({@link tableColumns}: the rows' values, then `load_id`), then the ledger and its checks.
 */
export function writtenColumns(): ReadonlyMap<keyof Warehouse, readonly string[]> {
  return new Map<keyof Warehouse, readonly string[]>([
    ...REPORT_TABLES.map((definition) => [definition.table, tableColumns(definition)] as const),
    ['report_loads', LEDGER_COLUMNS],
    ['slice_checks', SLICE_CHECK_COLUMNS],
  ]);
}
