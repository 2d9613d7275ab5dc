import { describe, expect, it } from 'vitest';
import { buildCoverageGrid, cellOutcome, countPeriods, type CoverageGrid } from '../../../src/coverage/coverage-grid.js';
import { eachIsoDate, shiftIsoDate, weekdayOf } from '../../../src/dates/report-date.js';
import type { LedgerPeriodCount } from '../../../src/warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../../../src/warehouse/engine/ledger-period.js';

/*
 * What a cell of the coverage grid shows, the rule `status` and the dashboard share. `loaded` and
 * `no_data` are both complete (as `check` says): a healthy week or month, weekdays loaded and
 * weekends without data, shows loaded at every zoom; a failed or missing slice inside still shows.
 */

type DayOutcome = 'loaded' | 'no_data' | 'failed' | 'missing';

/** A month as the nights leave it: weekdays loaded, weekends no data. */
const healthy = (date: string): DayOutcome => ([0, 6].includes(weekdayOf(date)) ? 'no_data' : 'loaded');

/** The ledger's counts per period for one pair, bucketed as `Ledger.countByPeriod` does. */
function countsOf(outcomeOf: (date: string) => DayOutcome, from: string, to: string, period: LedgerPeriod, portfolioId = 1001): LedgerPeriodCount[] {
  const buckets = new Map<string, { loaded: number; noData: number; failed: number }>();
  for (const date of eachIsoDate(from, to)) {
    const outcome = outcomeOf(date);
    if (outcome === 'missing') continue;
    const start = period === 'day' ? date : period === 'week' ? shiftIsoDate(date, -((weekdayOf(date) + 6) % 7)) : `${date.slice(0, 7)}-01`;
    const bucket = buckets.get(start) ?? { loaded: 0, noData: 0, failed: 0 };
    if (outcome === 'loaded') bucket.loaded += 1;
    else if (outcome === 'no_data') bucket.noData += 1;
    else bucket.failed += 1;
    buckets.set(start, bucket);
  }
  return [...buckets].map(([periodStart, counts]) => ({ portfolioId, reportType: 'index', periodStart, ...counts }));
}

function gridOf(outcomeOf: (date: string) => DayOutcome, period: LedgerPeriod, from = '2024-03-01', to = '2024-03-31'): CoverageGrid {
  return buildCoverageGrid({ from, to, period, pairs: [{ portfolioId: 1001, reportType: 'index' }], counts: countsOf(outcomeOf, from, to, period) });
}

const shown = (grid: CoverageGrid) => grid.rows[0]!.cells.map((cell) => `${cell.from}:${cell.worst}`);

describe('what a coverage cell shows', () => {
  it('a month of loaded weekdays and no-data weekends: loaded by week and by month, each day as it is', () => {
    const days = gridOf(healthy, 'day').rows[0]!.cells;
    expect(days).toHaveLength(31);
    for (const cell of days) expect(cell.worst, cell.from).toBe(healthy(cell.from));

    // March 2024 by ISO week: Fri 1 to Sun 3, then four whole weeks, each with its weekend.
    expect(shown(gridOf(healthy, 'week'))).toEqual(['2024-03-01:loaded', '2024-03-04:loaded', '2024-03-11:loaded', '2024-03-18:loaded', '2024-03-25:loaded']);
    const month = gridOf(healthy, 'month').rows[0]!.cells;
    expect(month).toEqual([{ from: '2024-03-01', to: '2024-03-31', loaded: 21, noData: 10, failed: 0, missing: 0, worst: 'loaded' }]);
  });

  it('a failed day shows at every zoom, in its day, its week and its month', () => {
    const oneFailed = (date: string) => (date === '2024-03-13' ? 'failed' : healthy(date));
    expect(shown(gridOf(oneFailed, 'day')).filter((cell) => !cell.endsWith('loaded') && !cell.endsWith('no_data'))).toEqual(['2024-03-13:failed']);
    expect(shown(gridOf(oneFailed, 'week'))).toEqual(['2024-03-01:loaded', '2024-03-04:loaded', '2024-03-11:failed', '2024-03-18:loaded', '2024-03-25:loaded']);
    expect(shown(gridOf(oneFailed, 'month'))).toEqual(['2024-03-01:failed']);
    // A failed weekend day, among no data, too.
    const failedSunday = (date: string) => (date === '2024-03-17' ? 'failed' : healthy(date));
    expect(shown(gridOf(failedSunday, 'week'))[2]).toBe('2024-03-11:failed');
  });

  it('a day never attempted shows as missing in its week and month, even beside loaded days', () => {
    const oneMissing = (date: string) => (date === '2024-03-20' ? 'missing' : healthy(date));
    expect(shown(gridOf(oneMissing, 'week'))).toEqual(['2024-03-01:loaded', '2024-03-04:loaded', '2024-03-11:loaded', '2024-03-18:missing', '2024-03-25:loaded']);
    expect(shown(gridOf(oneMissing, 'month'))).toEqual(['2024-03-01:missing']);
    // Failed ranks above missing.
    const both = (date: string) => (date === '2024-03-20' ? 'missing' : date === '2024-03-21' ? 'failed' : healthy(date));
    expect(shown(gridOf(both, 'week'))[3]).toBe('2024-03-18:failed');
  });

  it('no data only when nothing inside was loaded: a week without data stays apart from a loaded one', () => {
    const quietWeek = (date: string) => (date >= '2024-03-11' && date <= '2024-03-17' ? 'no_data' : healthy(date));
    expect(shown(gridOf(quietWeek, 'week'))).toEqual(['2024-03-01:loaded', '2024-03-04:loaded', '2024-03-11:no_data', '2024-03-18:loaded', '2024-03-25:loaded']);
    expect(shown(gridOf(quietWeek, 'month'))).toEqual(['2024-03-01:loaded']);
    expect(shown(gridOf(() => 'no_data', 'month'))).toEqual(['2024-03-01:no_data']);
  });

  it('ranks from counts alone: failed, then missing, then loaded if any was, else no data', () => {
    expect(cellOutcome({ loaded: 5, noData: 2, failed: 0, missing: 0 })).toBe('loaded');
    expect(cellOutcome({ loaded: 0, noData: 7, failed: 0, missing: 0 })).toBe('no_data');
    expect(cellOutcome({ loaded: 7, noData: 0, failed: 0, missing: 0 })).toBe('loaded');
    expect(cellOutcome({ loaded: 5, noData: 1, failed: 0, missing: 1 })).toBe('missing');
    expect(cellOutcome({ loaded: 5, noData: 0, failed: 1, missing: 1 })).toBe('failed');
    expect(cellOutcome({ loaded: 0, noData: 6, failed: 1, missing: 0 })).toBe('failed');
  });

  it("counts a range's columns by arithmetic, as many as the grid has, at every period", () => {
    const ranges = [
      ['2024-03-01', '2024-03-31'],
      ['2024-03-04', '2024-03-10'], // one whole ISO week
      ['2024-03-10', '2024-03-11'], // a Sunday and a Monday: two weeks
      ['2023-12-31', '2024-01-01'],
      ['2024-02-29', '2024-02-29'],
      ['2019-01-01', '2024-06-22'],
      ['0224-01-08', '0226-03-01'], // a year typed wrong: the arithmetic holds below 1000 too
    ] as const;
    for (const [from, to] of ranges) {
      for (const period of ['day', 'week', 'month'] as const) {
        const grid = buildCoverageGrid({ from, to, period, pairs: [{ portfolioId: 1, reportType: 'index' }], counts: [] });
        expect(countPeriods(from, to, period), `${from}..${to} by ${period}`).toBe(grid.rows[0]!.cells.length);
        expect(grid.rows[0]!.cells.at(-1)!.to).toBe(to);
      }
    }
    expect(countPeriods('2024-03-02', '2024-03-01', 'day')).toBe(0);
    expect(countPeriods('0100-01-01', '9999-12-31', 'day')).toBe(3_615_900);
    expect(countPeriods('0100-01-01', '9999-12-31', 'month')).toBe(118_800);
  });
});
