import { shiftIsoDate, weekdayOf } from '../../src/dates/report-date.js';
import type { Slice } from '../../src/slice/slice.js';

/** The first report date the benchmarks ask for: a Monday. */
const FIRST_DATE = '2024-01-01';

/**
 * `count` distinct `index` slices on weekdays only (the simulator answers weekends with an empty
 * body), `portfolios` portfolios per date from 1001 on, date by date as `run` plans them. The
 * product and the raw baseline are given this same list, so both fetch and load the same files.
 */
export function weekdayIndexSlices(count: number, portfolios = 20): Slice[] {
  const slices: Slice[] = [];
  for (let day = 0; slices.length < count; day += 1) {
    const reportDate = shiftIsoDate(FIRST_DATE, day);
    const weekday = weekdayOf(reportDate);
    if (weekday === 0 || weekday === 6) continue;
    for (let p = 0; p < portfolios && slices.length < count; p += 1) {
      slices.push({ portfolioId: 1001 + p, reportType: 'index', reportDate });
    }
  }
  return slices;
}
