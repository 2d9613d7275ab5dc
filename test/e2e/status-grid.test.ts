import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { REPORT_TYPES } from '../../src/reports/report-types.js';
import type { ReportLoadsRow } from '../../src/warehouse/engine/warehouse-schema.js';
import { capturedIo } from '../helpers/captured-io.js';
import { onTerminal } from '../helpers/on-terminal.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * `status` draws what the ledger holds as a grid: one row per portfolio and report type, one
 * character per day (or week, or month when the range is long): the worst trouble inside each
 * (failed, then missing), else loaded (no data when nothing in it was loaded).
 * Checked on a seeded ledger in both dialects, as plain text and in colour on a real terminal.
 */

const day = (n: number) => `2024-01-${String(n).padStart(2, '0')}`;

describe.each(DIALECTS)('status draws the coverage grid (%s)', (dialect) => {
  let seeded: SeededWarehouse | undefined;
  afterEach(async () => {
    await seeded?.close();
    seeded = undefined;
  });

  async function seed(): Promise<Record<string, string>> {
    const rows: ReportLoadsRow[] = [];
    // 1001 index: days 1–8 loaded, 9 failed, 10 missing. 1002 index: 1–3 no data, 4–10 loaded.
    for (let n = 1; n <= 8; n += 1) rows.push(ledgerRow(1001, 'index', day(n), 'loaded'));
    rows.push(ledgerRow(1001, 'index', day(9), 'failed'));
    for (let n = 1; n <= 3; n += 1) rows.push(ledgerRow(1002, 'index', day(n), 'no_data'));
    for (let n = 4; n <= 10; n += 1) rows.push(ledgerRow(1002, 'index', day(n), 'loaded'));
    // Years earlier, for the long range.
    rows.push(ledgerRow(1001, 'index', '2019-06-15', 'failed'));
    seeded = await seededWarehouse(dialect, rows);
    return seeded.env;
  }

  async function status(env: Record<string, string>, args: string[]) {
    const io = capturedIo(env, seeded!.dir);
    const code = await main(['status', '--portfolios', '1001,1002', '--report-types', 'index', ...args], io);
    return { code, stdout: io.stdout.text };
  }

  it('one character per day, the worst outcome first, with a legend (plain text when piped)', async () => {
    const env = await seed();
    const result = await status(env, ['--from', day(1), '--to', day(10)]);
    expect(result.code).toBe(0);
    const grid = result.stdout.slice(result.stdout.indexOf('Coverage from'), result.stdout.indexOf('Failed slices')).trimEnd();
    expect(grid.split('\n')).toEqual([
      'Coverage from 2024-01-01 to 2024-01-10, one column per day:',
      '             2024-01-01',
      '1001  index  ████████✗·',
      '1002  index  ░░░███████',
      '█ loaded  ░ no data  ✗ failed  · missing',
    ]);
    // Under the grid, the failures grouped, and the commands that retry and list them.
    const failures = result.stdout.slice(result.stdout.indexOf('Failed slices')).trimEnd().split('\n');
    expect(failures).toEqual([
      'Failed slices by error code and portfolio (1 slice):',
      '  EXPORT_FORBIDDEN: 1 slice',
      '    portfolio 1001: 1 slice, e.g. index 2024-01-09',
      '      EXPORT_FORBIDDEN: no entitlement',
      '',
      'Retry them: report-sync run --from 2024-01-09 --to 2024-01-09 --portfolios 1001 --report-types index --only-missing',
      'Every one of them: report-sync status --failed --json --from 2024-01-01 --to 2024-01-10',
    ]);
    expect(result.stdout).not.toContain('\u001b[');
  });

  it('aggregates a long range to months, each showing the worst trouble inside it', async () => {
    const env = await seed();
    const result = await status(env, ['--from', '2019-01-01', '--to', '2024-01-31']);
    const lines = result.stdout.split('\n');
    expect(lines).toContain('Coverage from 2019-01-01 to 2024-01-31, one column per month:');
    const row1001 = lines.find((line) => line.startsWith('1001  index  '))!.slice('1001  index  '.length);
    const row1002 = lines.find((line) => line.startsWith('1002  index  '))!.slice('1002  index  '.length);
    // 61 months: June 2019 failed, January 2024 failed (day 9), the rest missing.
    expect(row1001).toHaveLength(61);
    expect(row1001[5]).toBe('✗');
    expect(row1001[60]).toBe('✗');
    expect(row1001.replaceAll('·', '')).toBe('✗✗');
    expect(row1002[60]).toBe('·');
    // The table's counts, summed from the grid's months, are those --json counts per status.
    const json = JSON.parse((await status(env, ['--from', '2019-01-01', '--to', '2024-01-31', '--json'])).stdout) as {
      pairs: { portfolioId: number; loaded: number; noData: number; failed: number; missing: number }[];
    };
    expect(json.pairs.map((pair) => `${pair.portfolioId} ${pair.loaded} ${pair.noData} ${pair.failed} ${pair.missing}`)).toEqual(['1001 8 0 2 1847', '1002 7 3 0 1847']);
    for (const pair of json.pairs) {
      const row = lines.find((line) => new RegExp(`^ *${pair.portfolioId}  index `).test(line) && !line.includes('█'))!;
      expect(row.trim().split(/ +/)).toEqual([String(pair.portfolioId), 'index', ...[pair.loaded, pair.noData, pair.failed, pair.missing, 0].map(String)]);
    }
    // The printed legend is the product: checked whole.
    expect(result.stdout).toContain(
      'Each column shows the worst trouble inside it (failed, then missing), else loaded; no data only if nothing in it was loaded: █ loaded  ░ no data  ✗ failed  · missing',
    );
  });

  it('past 100 pairs, lists those in most trouble first and sums the rest in one line; --json lists every pair', async () => {
    // 21 portfolios × 6 report types × 3 days: 5 index failed on day 1, portfolio 7 missing day 2, the rest loaded.
    const portfolios = Array.from({ length: 21 }, (_, i) => i + 1);
    const rows: ReportLoadsRow[] = [];
    for (const portfolioId of portfolios) {
      for (const reportType of REPORT_TYPES) {
        for (let n = 1; n <= 3; n += 1) {
          if (portfolioId === 7 && n === 2) continue;
          rows.push(ledgerRow(portfolioId, reportType, day(n), portfolioId === 5 && reportType === 'index' && n === 1 ? 'failed' : 'loaded'));
        }
      }
    }
    seeded = await seededWarehouse(dialect, rows);
    const ask = async (extra: string[]) => {
      const io = capturedIo(seeded!.env, seeded!.dir);
      expect(await main(['status', '--portfolios', portfolios.join(','), '--from', day(1), '--to', day(3), ...extra], io)).toBe(0);
      return io.stdout.text;
    };
    const lines = (await ask([])).split('\n');
    const table = lines.slice(
      lines.findIndex((line) => line.startsWith('portfolio')) + 2,
      lines.findIndex((line) => line.startsWith('… and ')),
    );
    expect(table).toHaveLength(100);
    expect(table.slice(0, 3).map((line) => line.trim().split(/ +/))).toEqual([
      ['5', 'index', '2', '0', '1', '0', '0'],
      ['7', 'constituent.close', '2', '0', '0', '1', '0'],
      ['7', 'constituent.corporateactions', '2', '0', '0', '1', '0'],
    ]);
    // Then the untroubled pairs in pair order, as far as 100 go: 1 to 17 but for 5 index and 7.
    expect(table[7]!.trim().split(/ +/).slice(0, 2)).toEqual(['1', 'constituent.close']);
    expect(lines).toContain(
      '… and 26 more pairs: loaded 78, no_data 0, failed 0, missing 0, loaded with warnings 0 (every pair: report-sync status --json --from 2024-01-01 --to 2024-01-03, or narrow with --portfolios)',
    );
    // The grid draws the same pairs in the same order.
    const grid = lines.slice(lines.findIndex((line) => line.startsWith('Coverage from')) + 2);
    expect(grid[0]).toMatch(/^5 {2}index +✗██$/);
    expect(grid[1]).toMatch(/^7 {2}constituent\.close +█·█$/);
    expect(grid.filter((line) => /^\d+ /.test(line))).toHaveLength(100);
    const json = JSON.parse(await ask(['--json'])) as { pairs: unknown[] };
    expect(json.pairs).toHaveLength(126);
  });

  it('colours the cells on a terminal, and not with NO_COLOR', async () => {
    const env = await seed();
    const coloured = await onTerminal(`status --portfolios 1001,1002 --report-types index --from ${day(1)} --to ${day(10)}`, { cwd: seeded!.dir, env });
    expect(coloured).toContain('\u001b[32m████████\u001b[31m✗\u001b[2m·\u001b[0m');
    const plain = await onTerminal(`status --portfolios 1001,1002 --report-types index --from ${day(1)} --to ${day(10)}`, { cwd: seeded!.dir, env: { ...env, NO_COLOR: '1' } });
    expect(plain).toContain('1001  index  ████████✗·');
    expect(plain).not.toContain('\u001b[32m');
  }, 30_000);
});
