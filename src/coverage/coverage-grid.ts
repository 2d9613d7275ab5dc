import { countIsoDates, weekdayOf } from '../dates/report-date.js';
import { pairKey } from '../slice/slice.js';
import type { LedgerPeriodCount } from '../warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../warehouse/engine/ledger-period.js';

/** The outcome a grid cell shows (see {@link cellOutcome}). */
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
  /** What the cell shows: {@link cellOutcome} of its counts. */
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
 * What a cell of a day, week or month shows: failed, else missing; without trouble, loaded if any
 * slice was, no data only when none was, so a healthy week of loaded weekdays and no-data weekends
 * is loaded.
 */
export function cellOutcome(counts: { readonly loaded: number; readonly noData: number; readonly failed: number; readonly missing: number }): CoverageOutcome {
  if (counts.failed > 0) return 'failed';
  if (counts.missing > 0) return 'missing';
  return counts.loaded > 0 || counts.noData === 0 ? 'loaded' : 'no_data';
}

/**
 * The finest period that fits the range in `maxColumns` cells: days, else ISO weeks, else months
 * (a ten-year range is 120 months; wider still, the caller shows what fits).
 */
export function choosePeriod(from: string, to: string, maxColumns: number): LedgerPeriod {
  if (countPeriods(from, to, 'day') <= maxColumns) return 'day';
  if (countPeriods(from, to, 'week') <= maxColumns) return 'week';
  return 'month';
}

/**
 * The columns a grid of the range has at `period` (days, ISO weeks or months it touches), by
 * arithmetic: what a grid would cost is known before a cell of it is made.
 */
export function countPeriods(from: string, to: string, period: LedgerPeriod): number {
  const days = countIsoDates(from, to);
  if (days === 0) return 0;
  if (period === 'day') return days;
  if (period === 'week') return Math.floor((((weekdayOf(from) + 6) % 7) + days - 1) / 7) + 1;
  const month = (date: string) => Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7));
  return month(to) - month(from) + 1;
}

/**
 * The grid of `pairs` over the range, from the ledger's counts per period. Every pair gets every
 * period, so a pair the ledger never saw is all missing; pairs the counts name beyond `pairs` are
 * added after them. A cell's `worst` is what it shows ({@link cellOutcome}).
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
  const columnOf = new Map(spans.map((span, i) => [span.from, i]));
  const tallies = new Map<string, { portfolioId: number; reportType: string; cells: { loaded: number; noData: number; failed: number; missing: number }[] }>();
  const row = (portfolioId: number, reportType: string) => {
    const key = pairKey(portfolioId, reportType);
    let tally = tallies.get(key);
    if (!tally) {
      tally = { portfolioId, reportType, cells: spans.map(() => ({ loaded: 0, noData: 0, failed: 0, missing: 0 })) };
      tallies.set(key, tally);
    }
    return tally;
  };
  for (const pair of options.pairs) row(pair.portfolioId, pair.reportType);
  for (const count of options.counts) {
    // A week or month that starts before the range is the range's first cell.
    const cell = row(count.portfolioId, count.reportType).cells[count.periodStart < from ? 0 : columnOf.get(count.periodStart)!]!;
    cell.loaded += count.loaded;
    cell.noData += count.noData;
    cell.failed += count.failed;
  }
  const rows = [...tallies.values()].map((tally) => ({
    portfolioId: tally.portfolioId,
    reportType: tally.reportType,
    cells: tally.cells.map((counts, i) => {
      const span = spans[i]!;
      // Into the tally itself: a copy of the counts per cell for cellOutcome would be a second
      // short-lived object per cell, and on a wide grid a larger peak for the dashboard.
      counts.missing = Math.max(0, span.days - counts.loaded - counts.noData - counts.failed);
      return { from: span.from, to: span.to, loaded: counts.loaded, noData: counts.noData, failed: counts.failed, missing: counts.missing, worst: cellOutcome(counts) };
    }),
  }));
  return { from, to, period, rows };
}


const DAY_MS = 86_400_000;

/**
 * The periods of the range, each cut to it, with their days; a cell's key is its first day inside
 * the range. Stepped over UTC midnights by hand: date-fns, once per column, cost more than the
 * grid's cells on a range of ten thousand days.
 */
function periodSpans(from: string, to: string, period: LedgerPeriod): { from: string; to: string; days: number }[] {
  const spans: { from: string; to: string; days: number }[] = [];
  const last = utcMidnight(to);
  for (let start = utcMidnight(from); start <= last;) {
    const end = Math.min(last, periodEnd(start, period));
    spans.push({ from: isoDateOf(start), to: isoDateOf(end), days: (end - start) / DAY_MS + 1 });
    start = end + DAY_MS;
  }
  return spans;
}

/** The UTC midnight of a YYYY-MM-DD date, in milliseconds (`Date.UTC` would read years below 100 as 19xx). */
function utcMidnight(isoDate: string): number {
  const date = new Date(0);
  date.setUTCFullYear(Number(isoDate.slice(0, 4)), Number(isoDate.slice(5, 7)) - 1, Number(isoDate.slice(8, 10)));
  return date.getTime();
}

function isoDateOf(time: number): string {
  return new Date(time).toISOString().slice(0, 10);
}

/** The last day of the period (ISO week: to Sunday) that the UTC midnight `time` falls in. */
function periodEnd(time: number, period: LedgerPeriod): number {
  if (period === 'day') return time;
  const date = new Date(time);
  if (period === 'week') return time + ((7 - date.getUTCDay()) % 7) * DAY_MS;
  date.setUTCMonth(date.getUTCMonth() + 1, 0);
  return date.getTime();
}
