import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { shiftIsoDate } from '../../src/dates/report-date.js';
import { capturedIo } from '../helpers/captured-io.js';
import { ledgerRow } from '../helpers/ledger-row.js';
import { seededWarehouse, type SeededWarehouse } from '../helpers/seeded-warehouse.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * `status --failed` answers "what failed?" on its own: grouped by error code and portfolio as text,
 * narrowed by --code, and every failed slice with --json, however many (the table view lists 1,000).
 */

const failedRow = (portfolioId: number, reportDate: string, code: string) =>
  ledgerRow(portfolioId, 'index', reportDate, 'failed', { error: `${code}: what to check for ${portfolioId}` });

describe.each(DIALECTS)('status --failed (%s)', (dialect) => {
  let seeded: SeededWarehouse | undefined;
  afterEach(async () => {
    await seeded?.close();
    seeded = undefined;
  });

  /** 1,200 EXPORT_FORBIDDEN days of portfolio 1001 (from 2020-01-01), 2 FILE_INVALID of 1002 and 1 of 1003. */
  async function seed(): Promise<Record<string, string>> {
    const rows = Array.from({ length: 1_200 }, (_, i) => failedRow(1001, shiftIsoDate('2020-01-01', i), 'EXPORT_FORBIDDEN'));
    rows.push(failedRow(1002, '2021-06-01', 'FILE_INVALID'), failedRow(1002, '2021-06-02', 'FILE_INVALID'), failedRow(1003, '2022-01-05', 'FILE_INVALID'));
    seeded = await seededWarehouse(dialect, rows);
    return seeded.env;
  }

  async function status(env: Record<string, string>, args: string[]) {
    const io = capturedIo(env, seeded!.dir);
    const code = await main(['status', '--from', '2020-01-01', '--to', '2023-12-31', '--portfolios', '1001,1002,1003', '--report-types', 'index', ...args], io);
    return { code, stdout: io.stdout.text, stderr: io.stderr.text };
  }

  it('groups the failures by code and portfolio, with counts and the retry command', async () => {
    const env = await seed();
    const result = await status(env, ['--failed']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toContain('Failed slices by error code and portfolio (1203 slices):');
    expect(lines).toContain('  EXPORT_FORBIDDEN: 1200 slices');
    expect(lines).toContain('  FILE_INVALID: 3 slices');
    expect(lines).toContain('    portfolio 1002: 2 slices, e.g. index 2021-06-01, index 2021-06-02');
    expect(lines).toContain('    portfolio 1003: 1 slice, e.g. index 2022-01-05');
    // The retry command is what the user copies: checked whole.
    expect(result.stdout).toContain('Retry them: report-sync run --from 2020-01-01 --to 2023-04-14 --portfolios 1001,1002,1003 --report-types index --only-missing');
    // No grid, no table: the question was what failed.
    expect(result.stdout).not.toContain('Coverage from');
    expect(lines.length).toBeLessThan(30);
  });

  it('--code narrows to one code', async () => {
    const env = await seed();
    const result = await status(env, ['--code', 'file_invalid']);
    expect(result.stdout).toContain('Failed slices with code FILE_INVALID from 2020-01-01 to 2023-12-31');
    expect(result.stdout).toContain('  FILE_INVALID: 3 slices');
    expect(result.stdout).not.toContain('EXPORT_FORBIDDEN');
    expect(result.stdout).toContain('--portfolios 1002,1003');
  });

  it('--json lists every failed slice, past the thousand the table shows', async () => {
    const env = await seed();
    const result = await status(env, ['--failed', '--json']);
    const parsed = JSON.parse(result.stdout) as { total: number; failed: { portfolioId: number; reportDate: string; error: string }[]; groups: unknown[] };
    expect(parsed.total).toBe(1_203);
    expect(parsed.failed).toHaveLength(1_203);
    expect(parsed.failed[0]).toMatchObject({ portfolioId: 1001, reportDate: '2020-01-01', error: 'EXPORT_FORBIDDEN: what to check for 1001' });
    expect(parsed.groups).toEqual([
      { code: 'EXPORT_FORBIDDEN', portfolioId: 1001, slices: 1_200 },
      { code: 'FILE_INVALID', portfolioId: 1002, slices: 2 },
      { code: 'FILE_INVALID', portfolioId: 1003, slices: 1 },
    ]);
    const none = await status(env, ['--code', 'EXPORT_NOT_FOUND']);
    expect(none.stdout).toMatch(/^No failed slices with code EXPORT_NOT_FOUND from 2020-01-01 to 2023-12-31 in \S+\.\n$/);
  });
});
