import { countIsoDates, eachIsoDate, monthEnd, shiftIsoDate } from '../dates/report-date.js';
import type { ReportType } from '../reports/report-types.js';
import type { Slice } from './slice.js';

export interface SliceRange {
  /** First report date, YYYY-MM-DD, included. */
  readonly from: string;
  /** Last report date, included. */
  readonly to: string;
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly ReportType[];
}

/** Every slice of a range, date by date, produced lazily (a ten-year backfill is millions). */
export function* planSlices(range: SliceRange): Generator<Slice> {
  for (const reportDate of eachIsoDate(range.from, range.to)) {
    for (const portfolioId of range.portfolios) {
      for (const reportType of range.reportTypes) yield { portfolioId, reportType, reportDate };
    }
  }
}

/** How many slices {@link planSlices} yields for a range. */
export function countSlices(range: SliceRange): number {
  return countIsoDates(range.from, range.to) * range.portfolios.length * range.reportTypes.length;
}

/** Days of ledger read at a time by the questions that walk a range: bounds memory on a ten-year range. */
export const LEDGER_WINDOW_DAYS = 31;

/** The range cut at the months' ends: one window per calendar month it touches, lazily. */
export function* rangeMonths(range: SliceRange): Generator<SliceRange> {
  for (let from = range.from; from <= range.to; from = shiftIsoDate(monthEnd(from), 1)) {
    const lastDay = monthEnd(from);
    yield { ...range, from, to: lastDay < range.to ? lastDay : range.to };
  }
}

/** The range cut into consecutive windows of at most `days` days (the last one shorter), lazily. */
export function* rangeWindows(range: SliceRange, days = LEDGER_WINDOW_DAYS): Generator<SliceRange> {
  for (let from = range.from; from <= range.to; from = shiftIsoDate(from, days)) {
    const lastDay = shiftIsoDate(from, days - 1);
    // Not Math.min: these are ISO date strings, which it would turn into NaN.
    yield { ...range, from, to: lastDay < range.to ? lastDay : range.to };
  }
}

/**
 * The range with only the portfolios and report types of `pairs`, in the range's order, so its
 * slices are a subsequence of the range's. It holds every pair of those portfolios and types,
 * also pairs not in `pairs`.
 */
export function rangeOfPairs(range: SliceRange, pairs: Iterable<{ readonly portfolioId: number; readonly reportType: ReportType }>): SliceRange {
  const portfolios = new Set<number>();
  const reportTypes = new Set<ReportType>();
  for (const pair of pairs) {
    portfolios.add(pair.portfolioId);
    reportTypes.add(pair.reportType);
  }
  return { ...range, portfolios: range.portfolios.filter((id) => portfolios.has(id)), reportTypes: range.reportTypes.filter((type) => reportTypes.has(type)) };
}
