import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
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

  it('colours the cells on a terminal, and not with NO_COLOR', async () => {
    const env = await seed();
    const coloured = await onTerminal(`status --portfolios 1001,1002 --report-types index --from ${day(1)} --to ${day(10)}`, { cwd: seeded!.dir, env });
    expect(coloured).toContain('\u001b[32m████████\u001b[31m✗\u001b[2m·\u001b[0m');
    const plain = await onTerminal(`status --portfolios 1001,1002 --report-types index --from ${day(1)} --to ${day(10)}`, { cwd: seeded!.dir, env: { ...env, NO_COLOR: '1' } });
    expect(plain).toContain('1001  index  ████████✗·');
    expect(plain).not.toContain('\u001b[32m');
  }, 30_000);
});
