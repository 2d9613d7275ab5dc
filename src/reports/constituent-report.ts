import type { ReportType } from './report-types.js';
import type { ReportDefinition } from './report-definition.js';

/** A row of `constituent_report`: one line of a `constituent.*` export (one security). */
export interface ConstituentReportRow {
  portfolio_id: number;
  report_type: ReportType;
  report_date: string;
  line_number: number;
  effective_date: string;
  isin: string;
  security_name: string | null;
  security_ticker: string | null;
  exchange_code: string | null;
  closing_price: string | null;
  currency: string | null;
  closing_fx: string | null;
  index_shares: string | null;
  index_weighting: string | null;
  /** JSON object of the fields the spec does not list, under their source names; null when none. */
  extra: string | null;
}

/** The `constituent.*` reports: the CSV columns of the spec, in its order. */
export const constituentReport: ReportDefinition = {
  table: 'constituent_report',
  storesReportType: true,
  storesLineNumber: true,
  columns: [
    { name: 'effective_date', kind: 'date', key: true },
    { name: 'isin', kind: 'text', key: true },
    { name: 'security_name', kind: 'text' },
    { name: 'security_ticker', kind: 'text' },
    { name: 'exchange_code', kind: 'text' },
    { name: 'closing_price', kind: 'decimal' },
    { name: 'currency', kind: 'text' },
    { name: 'closing_fx', kind: 'decimal' },
    { name: 'index_shares', kind: 'decimal' },
    { name: 'index_weighting', kind: 'decimal' },
  ],
};
