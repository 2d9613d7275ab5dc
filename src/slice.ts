import type { ReportType } from './reports/report-types.js';

/** One (portfolio, report type, report date): the unit of work, retry, loading and bookkeeping. */
export interface Slice {
  readonly portfolioId: number;
  readonly reportType: ReportType;
  /** YYYY-MM-DD, the `date` asked of the export endpoint. */
  readonly reportDate: string;
}

/** A stable text id for a slice, e.g. `1001:index:2024-03-01` (job ids, log fields, maps). */
export function sliceKey(slice: Slice): string {
  return `${slice.portfolioId}:${slice.reportType}:${slice.reportDate}`;
}

/** How a slice is named in messages meant for people. */
export function describeSlice(slice: Slice): string {
  return `portfolio ${slice.portfolioId}, ${slice.reportType}, ${slice.reportDate}`;
}

/** The log fields that identify a slice. */
export function sliceLogFields(slice: Slice): { portfolioId: number; reportType: ReportType; reportDate: string } {
  return { portfolioId: slice.portfolioId, reportType: slice.reportType, reportDate: slice.reportDate };
}
