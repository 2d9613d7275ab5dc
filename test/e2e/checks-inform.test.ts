import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { indexRecord, useConstituentRig, type ConstituentLine } from '../helpers/constituent-rig.js';
import type { CliResult } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';
import { Receiver } from '../helpers/webhook-receiver.js';

/*
 * Checks inform, the user decides what blocks. An upstream of the test's own (the simulator only
 * issues the token) serves constituent files whose weights sum to 1.4, as a real service may (a
 * portfolio holding cash, a partial list: the spec never says weights sum to 1). By default they
 * are loaded, and the warning is counted and shown everywhere: the run summary, status, check,
 * the dashboard's API, one alert grouping them by check and portfolio with the values measured,
 * naming the host and the deployment it came from. A team that wants such files kept out sets the
 * check to `fail`, and they are refused as before, logged in one compact line.
 */

const MONDAY = '2024-05-06';
const TUESDAY = '2024-05-07';
const WEDNESDAY = '2024-05-08';

/** `rows` constituents of distinct ISINs, each weighing `weight` (as text, as served). */
function constituentLines(rows: number, weight: string, tag = 'A'): ConstituentLine[] {
  return Array.from({ length: rows }, (_, i) => ({ isin: `XS${tag}${String(i).padStart(9, '0')}`, name: `Acme ${i}`, weight }));
}

describe.each(DIALECTS)('data-quality checks inform by default, in %s', (dialect) => {
  const rig = useConstituentRig(dialect);
  const cli = rig.cliOnUpstream;

  async function serveConstituents(portfolioId: number, date: string, rows: number, weight: string, tag?: string): Promise<void> {
    await rig.serveConstituents(portfolioId, date, constituentLines(rows, weight, tag));
  }

  function serveIndex(portfolioId: number, date: string, value: string): void {
    rig.serveIndex(portfolioId, date, [indexRecord(date, value)]);
  }

  async function ledgerRow(portfolioId: number, reportDate: string) {
    return rig.ledger({ portfolioId, reportType: 'constituent.close', reportDate });
  }

  /** The rows of `table` whose load is not one of `before` (the load ids held before a run): the rows that run wrote. */
  async function loadIds(table: 'constituent_report' | 'index_report', portfolios: readonly number[]): Promise<string[]> {
    const warehouse = await rig.warehouse();
    const rows = await warehouse.db
      .selectFrom(table)
      .select('load_id')
      .where('portfolio_id', 'in', [...portfolios])
      .execute();
    return rows.map((row) => String(row.load_id));
  }

  function rowsWritten(stdout: string, table: string): number {
    const match = new RegExp(`^${table}\\s+(\\d+)\\s*$`, 'm').exec(stdout);
    if (!match) throw new Error(`no rows-written line for ${table} in:\n${stdout}`);
    return Number(match[1]);
  }

  describe('weights that sum to 1.4', () => {
    const [cash, partial, good] = [7101, 7102, 7103];
    const portfolios = `${cash},${partial},${good}`;
    const range = ['--from', MONDAY, '--to', WEDNESDAY, '--portfolios', portfolios, '--report-types', 'constituent.close'];
    let receiver: Receiver;
    let run: CliResult;

    beforeAll(async () => {
      for (const date of [MONDAY, TUESDAY, WEDNESDAY]) {
        await serveConstituents(cash, date, 4, '0.35');
        await serveConstituents(partial, date, 7, '0.2');
        await serveConstituents(good, date, 4, '0.25');
      }
      receiver = await Receiver.start();
      run = await cli(['run', ...range], { env: { REPORT_ALERT_WEBHOOK_URL: receiver.url.href, REPORT_ALERT_WEBHOOK_FORMAT: 'json', REPORT_ALERT_DEPLOYMENT: 'reports-eu-2' } });
    });
    afterAll(async () => {
      await receiver?.close();
    });

    it('are loaded by default, and the run summary counts and groups the warnings with the values measured', async () => {
      expect(run.code, run.stdout + run.logs).toBe(0);
      for (const date of [MONDAY, TUESDAY, WEDNESDAY]) {
        expect(await ledgerRow(cash, date)).toMatchObject({ status: 'loaded', row_count: 4, error_code: null });
        expect(await ledgerRow(partial, date)).toMatchObject({ status: 'loaded', row_count: 7, error_code: null });
      }
      expect(run.stdout).toMatch(/^loaded\s+9\s*$/m);
      expect(run.stdout).toMatch(/^ {2}of which loaded with warnings\s+6\s*$/m);
      expect(run.stdout).toMatch(/^failed\s+0\s*$/m);
      expect(rowsWritten(run.stdout, 'constituent_report')).toBe(3 * (4 + 7 + 4));
      const lines = run.stdout.split('\n');
      const start = lines.findIndex((line) => line.startsWith('Loaded with warnings, by data-quality check and portfolio (6 slices'));
      expect(start, run.stdout).toBeGreaterThan(0);
      expect(lines[start + 1]).toBe('  weightsSum: 6 slices');
      // 7 × 0.2 = 1.4 and 4 × 0.35 = 1.4: both 40 % over, against a tolerance of 0.1 %.
      // The summary's printed layout is the product: checked whole.
      expect(lines[start + 2]).toBe(
        `    portfolio ${cash}: 3 slices, measured 0.4 (limit 0.001), e.g. constituent.close ${MONDAY}, constituent.close ${TUESDAY}, constituent.close ${WEDNESDAY}`,
      );
      expect(lines[start + 3]).toMatch(/^ {6}weightsSum: the weights \(index_weighting\) of 4 rows sum to 1\.4, 40 % away from 1/);
      expect(lines[start + 4]).toMatch(new RegExp(`^ {4}portfolio ${partial}: 3 slices, measured 0\\.4 \\(limit 0\\.001\\)`));
    });

    it('send one alert for the run, grouping them by check and portfolio with the values measured, from the host and deployment named', () => {
      expect(receiver.requests).toHaveLength(1);
      const body = receiver.requests[0]!.body as {
        warnings: {
          slices: number;
          groups: { measured: { min: number; max: number }; examples: Record<string, unknown>[] }[];
        };
      };
      expect(body).toMatchObject({
        source: 'report-sync',
        kind: 'run',
        host: hostname(),
        deployment: 'reports-eu-2',
        title: `report-sync run of ${MONDAY} to ${WEDNESDAY}: 6 of 9 slices loaded with warnings`,
        counts: { loaded: 9, warned: 6, failed: 0 },
        failures: { total: 0, groups: [] },
      });
      expect(body.warnings.slices).toBe(6);
      expect(body.warnings.groups).toEqual([
        expect.objectContaining({ check: 'weightsSum', portfolioId: cash, slices: 3, threshold: 0.001 }),
        expect.objectContaining({ check: 'weightsSum', portfolioId: partial, slices: 3, threshold: 0.001 }),
      ]);
      for (const group of body.warnings.groups) {
        expect(group.measured.min).toBeCloseTo(0.4, 9);
        expect(group.measured.max).toBeCloseTo(0.4, 9);
        expect(group.examples[0]).toMatchObject({ reportType: 'constituent.close', reportDate: MONDAY, message: expect.stringContaining('sum to 1.4') });
      }
    });

    it('are shown by status, as text and --json, counted as loaded', async () => {
      const args = ['--from', MONDAY, '--to', WEDNESDAY, '--portfolios', portfolios, '--report-types', 'constituent.close'];
      const text = await cli(['status', ...args]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/loaded with warnings/);
      expect(text.stdout).toMatch(new RegExp(`^ *${cash}\\s+constituent\\.close\\s+3\\s+0\\s+0\\s+0\\s+3\\s*$`, 'm'));
      expect(text.stdout).toMatch(new RegExp(`^ *${good}\\s+constituent\\.close\\s+3\\s+0\\s+0\\s+0\\s+0\\s*$`, 'm'));
      expect(text.stdout).toMatch(new RegExp(`warn\\s+${cash} constituent\\.close ${MONDAY}\\s+weightsSum: the weights`));

      const json = JSON.parse((await cli(['status', ...args, '--json'])).stdout);
      expect(json.pairs).toEqual([
        { portfolioId: cash, reportType: 'constituent.close', loaded: 3, noData: 0, failed: 0, missing: 0, warned: 3 },
        { portfolioId: partial, reportType: 'constituent.close', loaded: 3, noData: 0, failed: 0, missing: 0, warned: 3 },
        { portfolioId: good, reportType: 'constituent.close', loaded: 3, noData: 0, failed: 0, missing: 0, warned: 0 },
      ]);
      expect(json.checks.total).toBe(6);
    });

    it('are loaded for check --json (exit 0), which counts and lists them', async () => {
      const result = await cli(['check', '--date', WEDNESDAY, '--days', '3', '--portfolios', portfolios, '--report-types', 'constituent.close', '--json', '--no-alert']);
      expect(result.code, result.stdout).toBe(0);
      const json = JSON.parse(result.stdout);
      expect(json).toMatchObject({ status: 'ok', expected: 9, loaded: 9, warned: 6, failed: 0, missing: 0 });
      expect(json.checks.total).toBe(6);
      expect(new Set(json.checks.misses.map((miss: { check: string; outcome: string }) => `${miss.check} ${miss.outcome}`))).toEqual(new Set(['weightsSum warn']));
    });

    it("are counted by the dashboard's API, per cell and in all", async () => {
      await rig.withDashboard(async (url) => {
        const answer = await fetch(`${url}api/coverage?from=${MONDAY}&to=${WEDNESDAY}&portfolios=${portfolios}&reportTypes=constituent.close&period=day`);
        expect(answer.status).toBe(200);
        const view = (await answer.json()) as { warned: number; totals: { loaded: number }; rows: { portfolioId: number; cells: unknown[][]; warned: number[] }[] };
        expect(view.totals.loaded).toBe(9);
        expect(view.warned).toBe(6);
        expect(view.rows.map((row) => [row.portfolioId, row.cells.map((cell, i) => [cell[1], row.warned[i]])])).toEqual([
          [
            cash,
            [
              [1, 1],
              [1, 1],
              [1, 1],
            ],
          ],
          [
            partial,
            [
              [1, 1],
              [1, 1],
              [1, 1],
            ],
          ],
          [
            good,
            [
              [1, 0],
              [1, 0],
              [1, 0],
            ],
          ],
        ]);
        const weekly = (await (
          await fetch(`${url}api/coverage?from=${MONDAY}&to=${WEDNESDAY}&portfolios=${cash}&reportTypes=constituent.close&period=week`)
        ).json()) as typeof view;
        expect(weekly.rows[0]!.cells.map((cell, i) => [cell[1], weekly.rows[0]!.warned[i]])).toEqual([[3, 3]]);
      });
    });
  });

  it('set to fail, refuses the file as before, in one compact log line without a stack', async () => {
    const portfolioId = 7201;
    await serveConstituents(portfolioId, MONDAY, 4, '0.35');
    const result = await cli(['run', '--from', MONDAY, '--to', MONDAY, '--portfolios', String(portfolioId), '--report-types', 'constituent.close'], {
      settings: { checks: { weightsSum: { severity: 'fail' } } },
    });
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toContain('QUALITY_CHECK_FAILED');
    expect(await ledgerRow(portfolioId, MONDAY)).toMatchObject({ status: 'failed', error_code: 'QUALITY_CHECK_FAILED', row_count: 0 });
    const lines = result.logs.split('\n').filter((line) => line.includes('"QUALITY_CHECK_FAILED"'));
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    const parsed = JSON.parse(line) as { msg: string; err: Record<string, unknown> };
    expect(parsed.msg).toBe('slice failed');
    expect(parsed.err).toEqual({ type: 'QualityCheckError', code: 'QUALITY_CHECK_FAILED', message: expect.stringContaining('weightsSum: the weights') });
    // The message once (no stack repeating it), and none of the checks that passed.
    expect(line.split('sum to 1.4').length - 1).toBe(1);
    expect(line).not.toContain('duplicateIsin');
    expect(Buffer.byteLength(line)).toBeLessThan(1_200);
  });

  it('counts in the summary the rows written, those of warned slices included and none of unchanged ones', async () => {
    const [plain, warned] = [7301, 7302];
    const args = (from: string, to: string) => ['run', '--from', from, '--to', to, '--portfolios', `${plain},${warned}`, '--report-types', 'index,constituent.close'];
    for (const date of [MONDAY, TUESDAY]) {
      await serveConstituents(plain, date, 4, '0.25');
      await serveConstituents(warned, date, 5, '0.3');
      serveIndex(plain, date, '1001.25');
    }
    const first = await cli(args(MONDAY, TUESDAY));
    expect(first.code, first.stdout).toBe(0);
    expect(first.stdout).toMatch(/^ {2}of which loaded with warnings\s+2\s*$/m);
    expect(rowsWritten(first.stdout, 'constituent_report')).toBe(2 * (4 + 5));
    expect(rowsWritten(first.stdout, 'index_report')).toBe(2);

    // Monday unchanged (the warned file too), Tuesday restated for one portfolio, Wednesday new.
    const constituentsBefore = new Set(await loadIds('constituent_report', [plain, warned]));
    const indexBefore = new Set(await loadIds('index_report', [plain, warned]));
    await serveConstituents(plain, TUESDAY, 4, '0.25', 'B');
    await serveConstituents(plain, WEDNESDAY, 4, '0.25');
    await serveConstituents(warned, WEDNESDAY, 5, '0.3');
    serveIndex(plain, WEDNESDAY, '1002.5');
    const second = await cli(args(MONDAY, WEDNESDAY));
    expect(second.code, second.stdout).toBe(0);
    expect(second.stdout).toMatch(/^loaded\s+9\s*$/m);
    expect(second.stdout).toMatch(/^ {2}of which unchanged\s+5\s*$/m);
    expect(second.stdout).toMatch(/^ {2}of which loaded with warnings\s+1\s*$/m);
    const constituentsWritten = (await loadIds('constituent_report', [plain, warned])).filter((id) => !constituentsBefore.has(id)).length;
    const indexWritten = (await loadIds('index_report', [plain, warned])).filter((id) => !indexBefore.has(id)).length;
    expect(constituentsWritten).toBe(4 + 4 + 5);
    expect(indexWritten).toBe(1);
    expect(rowsWritten(second.stdout, 'constituent_report')).toBe(constituentsWritten);
    expect(rowsWritten(second.stdout, 'index_report')).toBe(indexWritten);

    // Everything as before: nothing needed doing, and no row written.
    const third = await cli(args(MONDAY, WEDNESDAY));
    expect(third.code, third.stdout).toBe(0);
    expect(third.stdout).toContain('Nothing needed doing');
    expect(rowsWritten(third.stdout, 'constituent_report')).toBe(0);
    expect(rowsWritten(third.stdout, 'index_report')).toBe(0);
    expect(third.stdout).toMatch(/^ {2}of which loaded with warnings\s+0\s*$/m);
  });
});
