import { describe, expect, it } from 'vitest';
import { formatFailures } from '../../../src/cli/format-failures.js';
import { FailureTally } from '../../../src/outcomes/failure-groups.js';
import { retryCommand } from '../../../src/outcomes/retry-command.js';
import type { Slice } from '../../../src/slice/slice.js';

const day = (n: number) => `2024-01-${String(n).padStart(2, '0')}`;

describe('failures grouped by code and portfolio', () => {
  it('counts every failure, keeps three examples per group, and cannot let 744 forbidden slices hide one corrupt file', () => {
    const tally = new FailureTally();
    for (let d = 1; d <= 31; d += 1) {
      for (let hour = 0; hour < 24; hour += 1) {
        // 744 slices of one forbidden portfolio (index and constituent alternating).
        tally.add({ portfolioId: 1003, reportType: hour % 2 ? 'index' : 'constituent.close', reportDate: day(d) }, 'EXPORT_FORBIDDEN', `403 for portfolio 1003 on ${day(d)}`);
      }
    }
    tally.add({ portfolioId: 1001, reportType: 'constituent.close', reportDate: day(5) }, 'FILE_INVALID', 'line 7, column Closing Price: "12,5" is not a decimal');
    const summary = tally.summary();
    expect(summary.total).toBe(745);
    expect(summary.groups.map((group) => [group.code, group.portfolioId, group.slices])).toEqual([
      ['EXPORT_FORBIDDEN', 1003, 744],
      ['FILE_INVALID', 1001, 1],
    ]);
    expect(summary.groups[0]!.examples).toHaveLength(3);
    expect(summary.span).toEqual({ from: day(1), to: day(31), portfolios: [1001, 1003], reportTypes: ['constituent.close', 'index'] });

    const lines = formatFailures(summary);
    expect(lines.length).toBeLessThan(10);
    expect(lines.join('\n')).toContain('FILE_INVALID: 1 slice');
    expect(lines.join('\n')).toContain('portfolio 1001: 1 slice, e.g. constituent.close 2024-01-05');
    expect(lines.join('\n')).toContain('EXPORT_FORBIDDEN: 744 slices');
  });

  it('escapes control characters from upstream text and keeps each group to one line of reason', () => {
    const tally = new FailureTally();
    const slice: Slice = { portfolioId: 7, reportType: 'index', reportDate: day(2) };
    tally.add(slice, 'FILE_INVALID', 'bad\u001b]0;owned\u0007 name\r\nforged: line');
    const text = formatFailures(tally.summary()).join('\n');
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(text).toContain('FILE_INVALID: bad\\x1b]0;owned\\x07 name\\x0d\\x0aforged: line');
  });

  it('names the command that re-runs exactly what is missing', () => {
    expect(retryCommand('backfill', { from: day(1), to: day(9), portfolios: [1, 2], reportTypes: ['index'] }, 'my settings.json')).toBe(
      "report-sync backfill --from 2024-01-01 --to 2024-01-09 --portfolios 1,2 --report-types index --only-missing --config 'my settings.json'",
    );
  });
});
