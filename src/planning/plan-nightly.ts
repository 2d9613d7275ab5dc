import { shiftIsoDate, todayIn } from '../dates/report-date.js';
import type { ReportType } from '../reports/report-types.js';
import { sliceKey, type Slice } from '../slice/slice.js';
import { sliceOfEntry, type Ledger } from '../warehouse/ledger/ledger.js';
import { planSlices } from '../slice/slice-range.js';

export interface NightlyPlanOptions {
  readonly ledger: Ledger;
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly ReportType[];
  readonly timeZone: string;
  /** Days before yesterday to check again. */
  readonly lookbackDays: number;
  readonly now?: Date;
}

export interface NightlyPlan {
  /** Yesterday in the configured time zone. */
  readonly reportDate: string;
  /** First day of the lookback window (the day after it ends is `reportDate`). */
  readonly lookbackFrom: string;
  /** Yesterday's slices, then the window's slices that are missing, `no_data` or `failed`. */
  readonly slices: readonly Slice[];
  readonly rechecks: number;
}

/**
 * The nightly fan-out: yesterday's slices for every portfolio and report type, plus every slice
 * of the lookback window that is not yet `loaded` (never attempted, no data yet, or failed), so a
 * late file or a failed night is caught up without anyone asking.
 */
export async function planNightly(options: NightlyPlanOptions): Promise<NightlyPlan> {
  const reportDate = shiftIsoDate(todayIn(options.timeZone, options.now), -1);
  const yesterday = [...planSlices({ from: reportDate, to: reportDate, portfolios: options.portfolios, reportTypes: options.reportTypes })];
  if (options.lookbackDays === 0) return { reportDate, lookbackFrom: reportDate, slices: yesterday, rechecks: 0 };

  const lookbackFrom = shiftIsoDate(reportDate, -options.lookbackDays);
  const lookbackTo = shiftIsoDate(reportDate, -1);
  const filter = { from: lookbackFrom, to: lookbackTo, portfolios: options.portfolios, reportTypes: options.reportTypes };
  const loaded = new Set((await options.ledger.entries(filter, { status: 'loaded' })).map((entry) => sliceKey(sliceOfEntry(entry))));
  const rechecks = [...planSlices(filter)].filter((slice) => !loaded.has(sliceKey(slice)));
  return { reportDate, lookbackFrom, slices: [...yesterday, ...rechecks], rechecks: rechecks.length };
}
