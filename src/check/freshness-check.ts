import type { FailureSummary } from '../outcomes/failure-groups.js';
import type { SliceRange } from '../slice/slice-range.js';
import { countSlices, rangeMonths } from '../slice/slice-range.js';
import type { ReportType } from '../reports/report-types.js';
import { pairKey, type Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { SLICE_STATUSES } from '../warehouse/engine/warehouse-schema.js';
import { planMissingSlices } from '../planning/plan-missing-slices.js';

/** Missing slices named one by one; the rest are counted per portfolio and report type. */
const MISSING_NAMED = 20;

/** The slices of one portfolio and report type that have no outcome at all. */
export interface MissingGroup {
  readonly portfolioId: number;
  readonly reportType: ReportType;
  readonly slices: number;
  readonly firstDate: string;
  readonly lastDate: string;
}

/** What the freshness check found. */
export interface FreshnessResult {
  /** `ok`: every expected slice is loaded or no_data; `pending`: only slices of a night still within its grace are missing; `failed`: anything else. */
  readonly status: 'ok' | 'pending' | 'failed';
  readonly range: SliceRange;
  readonly expected: number;
  readonly loaded: number;
  readonly noData: number;
  readonly failed: number;
  readonly missing: number;
  readonly missingGroups: readonly MissingGroup[];
  /** The first few missing slices, oldest first. */
  readonly missingExamples: readonly Slice[];
  readonly failures: FailureSummary;
  /** When the last night's grace ends, if it has not yet. */
  readonly graceUntil: Date | undefined;
}

export interface FreshnessCheckOptions {
  readonly ledger: Ledger;
  /** The slices expected: days × portfolios × report types. */
  readonly range: SliceRange;
  /** Until when the night of the range's last day may still be running (its due time plus the grace). */
  readonly graceUntil: Date;
  readonly now?: Date;
}

/**
 * Is every expected slice `loaded` or `no_data`? Counted per month (see `Ledger.countByMonth`);
 * the months with gaps are planned as `backfill --only-missing` plans them (see
 * {@link planMissingSlices}), counting any outcome as done, their missing slices grouped by
 * portfolio and report type; failures are grouped by code and portfolio. The last day's slices
 * missing within its night's grace make the result `pending`: the night may be running.
 */
export async function checkFreshness(options: FreshnessCheckOptions): Promise<FreshnessResult> {
  const { ledger, range } = options;
  const now = options.now ?? new Date();
  const withinGrace = now.getTime() < options.graceUntil.getTime();
  // Per month and status: the totals, and which months hold gaps, in a few rows however many pairs.
  const counts = await ledger.countByMonth(range);
  const total = (status: string) => counts.filter((count) => count.status === status).reduce((sum, count) => sum + count.slices, 0);
  const expected = countSlices(range);
  const loaded = total('loaded');
  const noData = total('no_data');
  const failed = total('failed');
  const missing = expected - loaded - noData - failed;

  const groups = new Map<string, { portfolioId: number; reportType: ReportType; slices: number; firstDate: string; lastDate: string }>();
  const examples: Slice[] = [];
  let missingBeforeLastDay = 0;
  if (missing > 0) {
    // Only the months the counts say are short are read, and of them only the pairs short in
    // them, slice by slice: a gap in ten years costs its pairs' rows of a month, not ten years'.
    const counted = new Map<string, number>();
    for (const count of counts) counted.set(count.month, (counted.get(count.month) ?? 0) + count.slices);
    for (const window of rangeMonths(range)) {
      if ((counted.get(`${window.from.slice(0, 7)}-01`) ?? 0) >= countSlices(window)) continue;
      for await (const slice of planMissingSlices(window, ledger, { done: SLICE_STATUSES })) {
        if (slice.reportDate !== range.to) missingBeforeLastDay += 1;
        if (examples.length < MISSING_NAMED) examples.push(slice);
        const key = pairKey(slice.portfolioId, slice.reportType);
        const group = groups.get(key);
        if (group) {
          group.slices += 1;
          group.lastDate = slice.reportDate;
        } else {
          groups.set(key, { portfolioId: slice.portfolioId, reportType: slice.reportType, slices: 1, firstDate: slice.reportDate, lastDate: slice.reportDate });
        }
      }
    }
  }
  const failures = await ledger.failureSummary(range);
  const onlyTonightPending = missing > 0 && missingBeforeLastDay === 0 && withinGrace;
  const status = failed === 0 && (missing === 0 || onlyTonightPending) ? (missing === 0 ? 'ok' : 'pending') : 'failed';
  return {
    status,
    range,
    expected,
    loaded,
    noData,
    failed,
    missing,
    missingGroups: [...groups.values()].sort((a, b) => a.portfolioId - b.portfolioId || a.reportType.localeCompare(b.reportType)),
    missingExamples: examples,
    failures,
    graceUntil: withinGrace ? options.graceUntil : undefined,
  };
}
