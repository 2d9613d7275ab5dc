import { describe, expect, it } from 'vitest';
import { formatCoverageGrid } from '../../../src/cli/format-coverage-grid.js';
import { buildCoverageGrid, type CoverageGrid } from '../../../src/coverage/coverage-grid.js';
import { eachIsoDate, shiftIsoDate, weekdayOf } from '../../../src/dates/report-date.js';
import type { LedgerPeriodCount } from '../../../src/warehouse/ledger/ledger.js';
import type { LedgerPeriod } from '../../../src/warehouse/engine/ledger-period.js';

/*
 * `status`'s terminal grid draws the cells the dashboard draws: one character per cell, the
 * outcome the grid's rule gives it. A healthy week (weekdays loaded, weekend no data) is █ at
 * every zoom; a failed day shows as ✗ in its day, week and month.
 */

const MARK = { loaded: '█', no_data: '░', failed: '✗', missing: '·' } as const;

/** 1001 index: March 2024, weekdays loaded and weekends no data; 1002 index the same but 13 March failed. */
function grid(period: LedgerPeriod): CoverageGrid {
  const counts: LedgerPeriodCount[] = [];
  for (const portfolioId of [1001, 1002]) {
    const buckets = new Map<string, { loaded: number; noData: number; failed: number }>();
    for (const date of eachIsoDate('2024-03-01', '2024-03-31')) {
      const start = period === 'day' ? date : period === 'week' ? shiftIsoDate(date, -((weekdayOf(date) + 6) % 7)) : '2024-03-01';
      const bucket = buckets.get(start) ?? { loaded: 0, noData: 0, failed: 0 };
      if (portfolioId === 1002 && date === '2024-03-13') bucket.failed += 1;
      else if ([0, 6].includes(weekdayOf(date))) bucket.noData += 1;
      else bucket.loaded += 1;
      buckets.set(start, bucket);
    }
    for (const [periodStart, bucket] of buckets) counts.push({ portfolioId, reportType: 'index', periodStart, ...bucket });
  }
  const pairs = [1001, 1002].map((portfolioId) => ({ portfolioId, reportType: 'index' }));
  return buildCoverageGrid({ from: '2024-03-01', to: '2024-03-31', period, pairs, counts });
}

function rowsOf(text: string): Record<string, string> {
  const rows: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^(100\d) {2}index {2}(.*)$/.exec(line);
    if (match) rows[match[1]!] = match[2]!;
  }
  return rows;
}

describe('the status grid', () => {
  it('draws each cell as the grid shows it, at day, week and month', () => {
    for (const period of ['day', 'week', 'month'] as const) {
      const coverage = grid(period);
      const rows = rowsOf(formatCoverageGrid(coverage, { colour: false }));
      for (const row of coverage.rows) expect(rows[String(row.portfolioId)], period).toBe(row.cells.map((cell) => MARK[cell.worst]).join(''));
    }
  });

  it('a healthy month is █ by week and by month; a failed day shows at every zoom', () => {
    expect(rowsOf(formatCoverageGrid(grid('day'), { colour: false }))).toEqual({
      '1001': '█░░█████░░█████░░█████░░█████░░',
      '1002': '█░░█████░░██✗██░░█████░░█████░░',
    });
    expect(rowsOf(formatCoverageGrid(grid('week'), { colour: false }))).toEqual({ '1001': '█████', '1002': '██✗██' });
    expect(rowsOf(formatCoverageGrid(grid('month'), { colour: false }))).toEqual({ '1001': '█', '1002': '✗' });
    // Coloured, the healthy weeks are one green run.
    expect(formatCoverageGrid(grid('week'), { colour: true })).toContain('1001  index  \u001b[32m█████\u001b[0m');
  });

  it('says how a week or month column is drawn', () => {
    // The printed legend is the product: checked whole.
    expect(formatCoverageGrid(grid('week'), { colour: false }).split('\n').at(-1)).toBe(
      'Each column shows the worst trouble inside it (failed, then missing), else loaded; no data only if nothing in it was loaded: █ loaded  ░ no data  ✗ failed  · missing',
    );
    expect(formatCoverageGrid(grid('day'), { colour: false }).split('\n').at(-1)).toBe('█ loaded  ░ no data  ✗ failed  · missing');
  });
});
