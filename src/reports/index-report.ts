import type { ReportDefinition } from './report-definition.js';

/** A row of `index_report`: one record of an `index` export (one index of the portfolio). */
export interface IndexReportRow {
  portfolio_id: number;
  report_date: string;
  /** The record's 1-based position in its file. */
  line_number: number;
  effective_date: string;
  index_id: string;
  index_name: string | null;
  index_value: string | null;
  currency: string | null;
  close_market_value: string | null;
  open_market_value: string | null;
  close_divisor: string | null;
  open_divisor: string | null;
  /** JSON object of the fields the spec does not list, under their source names; null when none. */
  extra: string | null;
}

/** The `index` report: the JSON record fields of the spec, in its order. */
export const indexReport: ReportDefinition = {
  table: 'index_report',
  storesReportType: false,
  storesLineNumber: true,
  columns: [
    { name: 'effective_date', kind: 'date', key: true },
    { name: 'index_id', kind: 'text', key: true },
    { name: 'index_name', kind: 'text' },
    { name: 'index_value', kind: 'decimal' },
    { name: 'currency', kind: 'text' },
    { name: 'close_market_value', kind: 'decimal' },
    { name: 'open_market_value', kind: 'decimal' },
    { name: 'close_divisor', kind: 'decimal' },
    { name: 'open_divisor', kind: 'decimal' },
  ],
};
