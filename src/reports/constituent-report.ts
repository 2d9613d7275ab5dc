import type { ReportDefinition } from './report-definition.js';
import type { ReportRow } from './report-row.js';

/** The `constituent.*` reports: the CSV columns of the spec, in its order. */
export const constituentReport = {
  table: 'constituent_report',
  storesReportType: true,
  storesLineNumber: true,
  columns: [
    { name: 'effective_date', kind: 'date', key: true },
    { name: 'isin', kind: 'text', key: true, identifier: true },
    { name: 'security_name', kind: 'text' },
    { name: 'security_ticker', kind: 'text' },
    { name: 'exchange_code', kind: 'text' },
    { name: 'closing_price', kind: 'decimal' },
    { name: 'currency', kind: 'text' },
    { name: 'closing_fx', kind: 'decimal' },
    { name: 'index_shares', kind: 'decimal' },
    { name: 'index_weighting', kind: 'decimal' },
  ],
  checks: {
    weightColumn: 'index_weighting',
    uniqueColumn: 'isin',
    effectiveDateColumn: 'effective_date',
    positiveColumns: ['closing_price', 'closing_fx', 'index_shares'],
  },
} as const satisfies ReportDefinition;

/** A row of `constituent_report`: one line of a `constituent.*` export (one security). */
export type ConstituentReportRow = ReportRow<typeof constituentReport>;
