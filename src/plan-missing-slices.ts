import { planSlices, type SliceRange } from './plan-slices.js';
import { shiftIsoDate } from './report-date.js';
import { sliceKey, type Slice } from './slice.js';
import type { Ledger } from './warehouse/ledger.js';

/** Days of ledger read at a time: bounds memory on a ten-year range. */
const WINDOW_DAYS = 31;

/**
 * The slices of a range that the ledger does not have as `loaded` or `no_data` (never attempted,
 * or failed), produced lazily a month at a time.
 */
export async function* planMissingSlices(range: SliceRange, ledger: Ledger): AsyncGenerator<Slice> {
  for (let from = range.from; from <= range.to; from = shiftIsoDate(from, WINDOW_DAYS)) {
    const lastDay = shiftIsoDate(from, WINDOW_DAYS - 1);
    const to = lastDay < range.to ? lastDay : range.to;
    const window = { ...range, from, to };
    const done = new Set(
      (await ledger.entries(window, { status: ['loaded', 'no_data'] })).map((entry) =>
        sliceKey({ portfolioId: entry.portfolio_id, reportType: entry.report_type as Slice['reportType'], reportDate: entry.report_date }),
      ),
    );
    for (const slice of planSlices(window)) if (!done.has(sliceKey(slice))) yield slice;
  }
}
