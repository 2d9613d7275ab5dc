import type { ReportDefinition } from './report-definition.js';
import type { ReportRow } from './report-row.js';

/** The `index` report: the JSON record fields of the spec, in its order. */
export const indexReport = {
  table: 'index_report',
  storesReportType: false,
  storesLineNumber: true,
  columns: [
    { name: 'effective_date', kind: 'date', key: true },
    { name: 'index_id', kind: 'text', key: true, identifier: true },
    { name: 'index_name', kind: 'text' },
    { name: 'index_value', kind: 'decimal' },
    { name: 'currency', kind: 'text' },
    { name: 'close_market_value', kind: 'decimal' },
    { name: 'open_market_value', kind: 'decimal' },
    { name: 'close_divisor', kind: 'decimal' },
    { name: 'open_divisor', kind: 'decimal' },
  ],
  // An index file has no weights and no ISINs: its dates and its levels are what can be checked.
  checks: {
    effectiveDateColumn: 'effective_date',
    positiveColumns: ['index_value', 'close_market_value', 'open_market_value', 'close_divisor', 'open_divisor'],
  },
} as const satisfies ReportDefinition;

/** A row of `index_report`: one record of an `index` export (one index of the portfolio). */
export type IndexReportRow = ReportRow<typeof indexReport>;
