import { countIsoDates, shiftIsoDate, weekdayOf } from './report-date.js';
import type { LedgerPeriod, LedgerPeriodCount } from './warehouse/ledger.js';

/** The outcome a grid cell shows: the worst of the slices inside it. */
export type CoverageOutcome = 'failed' | 'missing' | 'no_data' | 'loaded';

/** One cell: one pair's slices of one day, week or month (cut to the range). */
export interface CoverageCell {
  /** First and last day of the cell inside the range (YYYY-MM-DD). */
  readonly from: string;
  readonly to: string;
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
  /** Days of the cell with no ledger row. */
  readonly missing: number;
  readonly worst: CoverageOutcome;
}

/** One row of the grid: a portfolio and report type. */
export interface CoverageRow {
  readonly portfolioId: number;
  readonly reportType: string;
  readonly cells: readonly CoverageCell[];
}

/** What the ledger holds over a range, by pair and period: the picture `status` and the dashboard draw. */
export interface CoverageGrid {
  readonly from: string;
  readonly to: string;
  readonly period: LedgerPeriod;
  readonly rows: readonly CoverageRow[];
}

/**
 * The finest period that fits the range in `maxColumns` cells: days, else ISO weeks, else months
 * (a ten-year range is 120 months; wider still, the caller shows what fits).
 */
export function choosePeriod(from: string, to: string, maxColumns: number): LedgerPeriod {
  const days = countIsoDates(from, to);
  if (days <= maxColumns) return 'day';
  if (Math.ceil(days / 7) + 1 <= maxColumns) return 'week';
  return 'month';
}

/**
 * The grid of `pairs` over the range, from the ledger's counts per period. Every pair gets every
 * period, so a pair the ledger never saw is all missing; pairs the counts name beyond `pairs` are
 * added after them. A cell's `worst` is failed, then missing, then no data, then loaded.
 */
export function buildCoverageGrid(options: {
  readonly from: string;
  readonly to: string;
  readonly period: LedgerPeriod;
  readonly pairs: readonly { readonly portfolioId: number; readonly reportType: string }[];
  readonly counts: readonly LedgerPeriodCount[];
}): CoverageGrid {
  const { from, to, period } = options;
  const spans = periodSpans(from, to, period);
  const tallies = new Map<string, { loaded: number; noData: number; failed: number }>();
  const pairKeys = new Map<string, { portfolioId: number; reportType: string }>();
  for (const pair of options.pairs) pairKeys.set(pairKey(pair.portfolioId, pair.reportType), pair);
  for (const count of options.counts) {
    const key = pairKey(count.portfolioId, count.reportType);
    if (!pairKeys.has(key)) pairKeys.set(key, { portfolioId: count.portfolioId, reportType: count.reportType });
    // A week or month that starts before the range is the range's first cell.
    const cellKey = `${key}\u0000${count.periodStart < from ? spans[0]!.from : count.periodStart}`;
    const tally = tallies.get(cellKey) ?? { loaded: 0, noData: 0, failed: 0 };
    if (count.status === 'loaded') tally.loaded += count.slices;
    else if (count.status === 'no_data') tally.noData += count.slices;
    else tally.failed += count.slices;
    tallies.set(cellKey, tally);
  }
  const rows = [...pairKeys.entries()].map(([key, pair]) => ({
    ...pair,
    cells: spans.map((span) => {
      const tally = tallies.get(`${key}\u0000${span.from}`) ?? { loaded: 0, noData: 0, failed: 0 };
      const missing = Math.max(0, countIsoDates(span.from, span.to) - tally.loaded - tally.noData - tally.failed);
      const worst: CoverageOutcome = tally.failed > 0 ? 'failed' : missing > 0 ? 'missing' : tally.noData > 0 ? 'no_data' : 'loaded';
      return { ...span, ...tally, missing, worst };
    }),
  }));
  return { from, to, period, rows };
}

function pairKey(portfolioId: number, reportType: string): string {
  return `${portfolioId}\u0000${reportType}`;
}

/** The periods of the range, each cut to it; a cell's key is its first day inside the range. */
function periodSpans(from: string, to: string, period: LedgerPeriod): { from: string; to: string }[] {
  const spans: { from: string; to: string }[] = [];
  let start = from;
  while (start <= to) {
    const end = minDate(to, periodEnd(start, period));
    spans.push({ from: start, to: end });
    start = shiftIsoDate(end, 1);
  }
  return spans;
}

/** The last day of the period `date` falls in. */
function periodEnd(date: string, period: LedgerPeriod): string {
  if (period === 'day') return date;
  if (period === 'week') return shiftIsoDate(date, (7 - weekdayOf(date)) % 7);
  const [year, month] = date.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(year, month, 0)).toISOString().slice(0, 10);
}

function minDate(a: string, b: string): string {
  return a < b ? a : b;
}
