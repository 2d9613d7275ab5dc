import { UsageError } from '../errors/sync-error.js';
import { isIsoDate } from '../dates/is-iso-date.js';
import { REPORT_TYPES, isReportType, type ReportType } from '../reports/report-types.js';

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

/** A map key for a portfolio and report type (a pair), in every grouping by pair. */
export function pairKey(portfolioId: number, reportType: string): string {
  return `${portfolioId}\u0000${reportType}`;
}

/** How a slice is named in messages meant for people. */
export function describeSlice(slice: Slice): string {
  return `portfolio ${slice.portfolioId}, ${slice.reportType}, ${slice.reportDate}`;
}

/** The log fields that identify a slice. */
export function sliceLogFields(slice: Slice): { portfolioId: number; reportType: ReportType; reportDate: string } {
  return { portfolioId: slice.portfolioId, reportType: slice.reportType, reportDate: slice.reportDate };
}

/** Largest portfolio id: the export endpoint's ids are 32-bit, and so is the warehouse column. */
const MAX_PORTFOLIO_ID = 2_147_483_647;

/**
 * Checks a slice from outside the process (queued job data anyone with Redis access can change)
 * before it reaches a URL or query: portfolio id within `MAX_PORTFOLIO_ID`, a spec report type, a
 * real YYYY-MM-DD date. Keeps only those three fields.
 * @throws UsageError naming the bad field and its value
 */
export function parseSlice(value: unknown): Slice {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`a slice must be an object with portfolioId, reportType and reportDate, not ${quoteValue(value)}`);
  }
  const { portfolioId, reportType, reportDate } = value as Record<string, unknown>;
  if (typeof portfolioId !== 'number' || !Number.isInteger(portfolioId) || portfolioId < 1 || portfolioId > MAX_PORTFOLIO_ID) {
    throw new UsageError(`portfolioId ${quoteValue(portfolioId)} is not a portfolio id (a whole number from 1 to ${MAX_PORTFOLIO_ID})`);
  }
  if (typeof reportType !== 'string' || !isReportType(reportType)) {
    throw new UsageError(`reportType ${quoteValue(reportType)} is not a report type; use one of ${REPORT_TYPES.join(', ')}`);
  }
  if (typeof reportDate !== 'string' || !isIsoDate(reportDate)) {
    throw new UsageError(`reportDate ${quoteValue(reportDate)} is not a date in YYYY-MM-DD form`);
  }
  return { portfolioId, reportType, reportDate };
}

function quoteValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 62 ? `${text.slice(0, 61)}…` : text;
}
