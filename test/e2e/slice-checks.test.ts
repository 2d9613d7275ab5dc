import { beforeAll, describe, expect, it } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { ReportType } from '../../src/reports/report-types.js';
import type { Slice } from '../../src/slice/slice.js';
import { indexRecord, useConstituentRig, type ConstituentLine } from '../helpers/constituent-rig.js';
import type { CliResult } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * Files that are well-formed but wrong (weights that do not add up, a duplicate ISIN, a halved day,
 * a stale effective date, a negative price), served by an upstream of the test's own (the
 * simulator only issues the token), loaded through the real CLI: a check set to `fail` refuses the
 * file and keeps the slice's earlier rows; one set to `warn` (every check's default) loads it and
 * says so; either way slice_checks records what was measured.
 */

/** A Monday, and the days around it. */
const MONDAY = '2024-05-06';
const FRIDAY_BEFORE = '2024-05-03';
const TUESDAY = '2024-05-07';
const WEDNESDAY = '2024-05-08';

/** `count` lines of distinct ISINs with equal weights summing to 1. */
function evenLines(count: number, date?: string, prefix = 'XS'): ConstituentLine[] {
  return Array.from({ length: count }, (_, i) => ({ isin: `${prefix}${String(i).padStart(10, '0')}`, weight: String(1 / count), date }));
}

/** Four lines whose weights sum to 0.8, which weightsSum's default tolerance misses. */
const WEIGHING_0_8 = evenLines(4).map((line) => ({ ...line, weight: '0.2' }));

describe.each(DIALECTS)('data-quality checks on every loaded slice, in %s', (dialect) => {
  const rig = useConstituentRig(dialect);
  const { serveConstituents, serveIndex, ledger, checks } = rig;
  let nextPortfolio = 5001;

  function newPortfolio(): number {
    return nextPortfolio++;
  }

  async function run(portfolioId: number, reportType: ReportType, date: string, settings?: SettingsInput): Promise<CliResult> {
    return rig.cliOnUpstream(['run', '--from', date, '--to', date, '--portfolios', String(portfolioId), '--report-types', reportType], { settings });
  }

  async function constituentRows(slice: Slice) {
    const warehouse = await rig.warehouse();
    const rows = await warehouse.db
      .selectFrom('constituent_report')
      .select(['isin', 'index_weighting', 'closing_price', 'effective_date'])
      .where('portfolio_id', '=', slice.portfolioId)
      .where('report_type', '=', slice.reportType)
      .where('report_date', '=', slice.reportDate)
      .orderBy('line_number')
      .execute();
    return rows.map((row) => ({ ...row, index_weighting: Number(row.index_weighting), closing_price: Number(row.closing_price), effective_date: String(row.effective_date) }));
  }

  /**
   * With `check` set to `fail`, loads a good file for the slice, then serves `bad` for it: the run
   * fails the slice with the check named, and the good rows stay.
   */
  async function expectRefusedKeepingEarlierRows(slice: Slice, bad: readonly ConstituentLine[], check: string, extra: SettingsInput = {}) {
    const settings: SettingsInput = { ...extra, checks: { ...extra.checks, [check]: { severity: 'fail' } } };
    await serveConstituents(slice.portfolioId, slice.reportDate, evenLines(4));
    const good = await run(slice.portfolioId, slice.reportType, slice.reportDate, settings);
    expect(good.code, good.stdout + good.logs).toBe(0);
    const before = await constituentRows(slice);
    expect(before).toHaveLength(4);
    const loadedLedger = await ledger(slice);

    await serveConstituents(slice.portfolioId, slice.reportDate, bad);
    const refused = await run(slice.portfolioId, slice.reportType, slice.reportDate, settings);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stdout).toContain('QUALITY_CHECK_FAILED');
    const after = await ledger(slice);
    expect(after).toMatchObject({ status: 'failed', error_code: 'QUALITY_CHECK_FAILED', row_count: 4, content_sha256: loadedLedger.content_sha256, attempts: 1 });
    expect(after.error).toContain(`${check}: `);
    expect(after.error).toContain(`checks.${check}.`);
    expect(await constituentRows(slice)).toEqual(before);
    const recorded = await checks(slice);
    expect(recorded.get(check)).toMatchObject({ severity: 'fail', outcome: 'fail' });
    return { recorded, after };
  }

  describe('weightsSum', () => {
    it('set to fail, refuses weights that sum to 0.85, keeping the rows loaded before', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const bad = [...evenLines(3).map((line) => ({ ...line, weight: '0.25' })), { isin: 'XS9999999999', weight: '0.1' }];
      const { recorded, after } = await expectRefusedKeepingEarlierRows(slice, bad, 'weightsSum');
      expect(recorded.get('weightsSum')!.measured).toBeCloseTo(0.15, 9);
      expect(recorded.get('weightsSum')!.threshold).toBe(0.001);
      expect(after.error).toMatch(/sum to 0\.85, 15 % away from 1 \(checks\.weightsSum\.tolerance allows 0\.1 %\)/);
    });

    it('passes weights in percent that sum to 100 within the tolerance, detecting the scale', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(slice.portfolioId, MONDAY, [
        { isin: 'XS0000000001', weight: '33.33' },
        { isin: 'XS0000000002', weight: '33.33' },
        { isin: 'XS0000000003', weight: '33.34' },
      ]);
      const result = await run(slice.portfolioId, slice.reportType, MONDAY);
      expect(result.code, result.stdout).toBe(0);
      expect(await ledger(slice)).toMatchObject({ status: 'loaded', row_count: 3 });
      const recorded = await checks(slice);
      expect(recorded.get('weightsSum')).toMatchObject({ outcome: 'pass', severity: 'warn' });
      expect(recorded.get('weightsSum')!.measured).toBeLessThan(1e-9);
      expect(recorded.get('weightsSum')!.message).toContain('away from 100');
      expect([...recorded.keys()].sort()).toEqual(['duplicateIsin', 'effectiveDate', 'positiveValues', 'rowCountDrop', 'weightsSum']);
    });

    it('loads a file that misses it (warn, the default), records the warning, and counts it in the summary', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(slice.portfolioId, MONDAY, WEIGHING_0_8);
      const result = await run(slice.portfolioId, slice.reportType, MONDAY);
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toMatch(/of which loaded with warnings\s+1/);
      expect(await ledger(slice)).toMatchObject({ status: 'loaded', row_count: 4, error_code: null });
      expect(await constituentRows(slice)).toHaveLength(4);
      const recorded = await checks(slice);
      expect(recorded.get('weightsSum')).toMatchObject({ severity: 'warn', outcome: 'warn' });
      expect(recorded.get('weightsSum')!.measured).toBeCloseTo(0.2, 9);
      const warned = result.logLines.find((line) => String(line.msg).includes('data-quality checks set to warn'));
      expect(warned?.checks).toEqual([expect.stringContaining('weightsSum: the weights (index_weighting) of 4 rows sum to 0.8')]);
    });
  });

  describe('duplicateIsin', () => {
    it('set to fail, refuses a file naming an ISIN twice, keeping the rows loaded before', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const lines = evenLines(4);
      const bad = [...lines.slice(0, 3), { ...lines[3]!, isin: lines[1]!.isin }];
      const { recorded, after } = await expectRefusedKeepingEarlierRows(slice, bad, 'duplicateIsin');
      expect(recorded.get('duplicateIsin')).toMatchObject({ measured: 1, threshold: 0 });
      expect(after.error).toContain(`1 row repeats the isin of an earlier row (first: "${lines[1]!.isin}" on row 4)`);
    });

    it('passes a file of distinct ISINs', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(slice.portfolioId, MONDAY, evenLines(5));
      expect((await run(slice.portfolioId, slice.reportType, MONDAY)).code).toBe(0);
      expect((await checks(slice)).get('duplicateIsin')).toMatchObject({ outcome: 'pass', measured: 0 });
    });
  });

  describe('rowCountDrop', () => {
    it('warns by default on a halved day against the previous loaded date, loading it; a full day after it passes', async () => {
      const portfolioId = newPortfolio();
      await serveConstituents(portfolioId, MONDAY, evenLines(4));
      await serveConstituents(portfolioId, TUESDAY, evenLines(2));
      await serveConstituents(portfolioId, WEDNESDAY, evenLines(4));
      expect((await run(portfolioId, 'constituent.close', MONDAY)).code).toBe(0);
      const first = await checks({ portfolioId, reportType: 'constituent.close', reportDate: MONDAY });
      expect(first.get('rowCountDrop')).toMatchObject({ outcome: 'pass', measured: 0 });
      expect(first.get('rowCountDrop')!.message).toContain('no earlier loaded date');

      const halved = await run(portfolioId, 'constituent.close', TUESDAY);
      expect(halved.code, halved.stdout).toBe(0);
      const tuesday: Slice = { portfolioId, reportType: 'constituent.close', reportDate: TUESDAY };
      expect(await ledger(tuesday)).toMatchObject({ status: 'loaded', row_count: 2 });
      expect(await constituentRows(tuesday)).toHaveLength(2);
      expect((await checks(tuesday)).get('rowCountDrop')).toMatchObject({ severity: 'warn', outcome: 'warn', measured: 0.5, threshold: 0.25 });
      expect((await checks(tuesday)).get('rowCountDrop')!.message).toContain(`2 rows against 4 on ${MONDAY}, the previous loaded date: 50 % fewer`);

      expect((await run(portfolioId, 'constituent.close', WEDNESDAY)).code).toBe(0);
      expect((await checks({ portfolioId, reportType: 'constituent.close', reportDate: WEDNESDAY })).get('rowCountDrop')).toMatchObject({ outcome: 'pass', measured: 0 });
    });

    it('set to fail, refuses a halved restatement of a day, keeping its rows', async () => {
      const portfolioId = newPortfolio();
      const settings: SettingsInput = { checks: { rowCountDrop: { severity: 'fail' } } };
      await serveConstituents(portfolioId, MONDAY, evenLines(4));
      expect((await run(portfolioId, 'constituent.close', MONDAY, settings)).code).toBe(0);
      const slice: Slice = { portfolioId, reportType: 'constituent.close', reportDate: TUESDAY };
      const { recorded } = await expectRefusedKeepingEarlierRows(slice, evenLines(2), 'rowCountDrop');
      expect(recorded.get('rowCountDrop')).toMatchObject({ measured: 0.5, threshold: 0.25 });
    });
  });

  describe('effectiveDate', () => {
    it('set to fail, refuses a stale effective date, keeping the rows loaded before', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const { recorded, after } = await expectRefusedKeepingEarlierRows(slice, evenLines(4, '2024-04-22'), 'effectiveDate');
      expect(recorded.get('effectiveDate')).toMatchObject({ measured: 10, threshold: 5 });
      expect(after.error).toContain('the oldest effective_date is 2024-04-22, 10 business days before');
      expect(after.error).toContain('checks.effectiveDate.maxBusinessDaysBefore allows 5');
    });

    it('set to fail, refuses an effective date after the report date', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const { recorded } = await expectRefusedKeepingEarlierRows(slice, evenLines(4, TUESDAY), 'effectiveDate');
      expect(recorded.get('effectiveDate')!.measured).toBe(-1);
    });

    it("passes the Friday before a Monday's report (1 business day), and the report date itself", async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(
        slice.portfolioId,
        MONDAY,
        [...evenLines(2, FRIDAY_BEFORE), ...evenLines(2, MONDAY, 'XT')].map((line) => ({ ...line, weight: '0.25' })),
      );
      expect((await run(slice.portfolioId, slice.reportType, MONDAY)).code).toBe(0);
      expect((await checks(slice)).get('effectiveDate')).toMatchObject({ outcome: 'pass', measured: 1, threshold: 5 });
      expect(await constituentRows(slice)).toHaveLength(4);
    });
  });

  describe('positiveValues', () => {
    it('set to fail, refuses a negative closing price, keeping the rows loaded before', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const bad = evenLines(4).map((line, i) => (i === 2 ? { ...line, price: '-12.5' } : i === 3 ? { ...line, fx: '0' } : line));
      const { recorded, after } = await expectRefusedKeepingEarlierRows(slice, bad, 'positiveValues');
      expect(recorded.get('positiveValues')).toMatchObject({ measured: 2, threshold: 0 });
      expect(after.error).toContain('2 values are not above zero (first: closing_price -12.5 on row 3)');
    });

    it('set to fail, refuses an index file with a negative index value; passes one with every value above zero', async () => {
      const portfolioId = newPortfolio();
      const record = (indexValue: string) => indexRecord(MONDAY, indexValue);
      serveIndex(portfolioId, MONDAY, [record('1001.25')]);
      expect((await run(portfolioId, 'index', MONDAY)).code).toBe(0);
      const slice: Slice = { portfolioId, reportType: 'index', reportDate: MONDAY };
      const passed = await checks(slice);
      expect(passed.get('positiveValues')).toMatchObject({ outcome: 'pass', measured: 0 });
      // An index file has no weights and no ISINs: those checks do not apply to it.
      expect([...passed.keys()].sort()).toEqual(['effectiveDate', 'positiveValues', 'rowCountDrop']);

      serveIndex(portfolioId, MONDAY, [record('-1001.25')]);
      const refused = await run(portfolioId, 'index', MONDAY, { checks: { positiveValues: { severity: 'fail' } } });
      expect(refused.code).toBe(1);
      expect(await ledger(slice)).toMatchObject({ status: 'failed', error_code: 'QUALITY_CHECK_FAILED', row_count: 1 });
      const warehouse = await rig.warehouse();
      const kept = await warehouse.db.selectFrom('index_report').select('index_value').where('portfolio_id', '=', portfolioId).execute();
      expect(kept.map((row) => Number(row.index_value))).toEqual([1001.25]);
      expect((await checks(slice)).get('positiveValues')).toMatchObject({ outcome: 'fail', measured: 1 });
    });

    it('passes every price, FX rate and share count above zero, and lets `off` skip the check', async () => {
      const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(
        slice.portfolioId,
        MONDAY,
        evenLines(4).map((line) => ({ ...line, price: '0.0001', fx: '+1.5', shares: '.5' })),
      );
      expect((await run(slice.portfolioId, slice.reportType, MONDAY)).code).toBe(0);
      expect((await checks(slice)).get('positiveValues')).toMatchObject({ outcome: 'pass', measured: 0 });

      const off: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(
        off.portfolioId,
        MONDAY,
        evenLines(4).map((line) => ({ ...line, shares: '-5' })),
      );
      expect((await run(off.portfolioId, off.reportType, MONDAY, { checks: { positiveValues: { severity: 'off' } } })).code).toBe(0);
      expect((await checks(off)).has('positiveValues')).toBe(false);
      expect(await constituentRows(off)).toHaveLength(4);
    });
  });

  it('checks the rows a worker thread typed too (limits.threadedParseBytes 0): a duplicate ISIN refused (set to fail), earlier rows kept; a good file passes', async () => {
    const threaded: SettingsInput = { limits: { threadedParseBytes: 0 } };
    const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
    const bad = [...evenLines(3).map((line) => ({ ...line, weight: '0.25' })), { isin: 'XS0000000000', weight: '0.25' }];
    const { recorded } = await expectRefusedKeepingEarlierRows(slice, bad, 'duplicateIsin', threaded);
    expect(recorded.get('duplicateIsin')!.measured).toBe(1);
    const fine: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
    await serveConstituents(fine.portfolioId, fine.reportDate, evenLines(5));
    const loaded = await run(fine.portfolioId, fine.reportType, fine.reportDate, { ...threaded, log: { level: 'debug' } });
    expect(loaded.code, loaded.stdout + loaded.logs).toBe(0);
    expect(loaded.logs).toContain('reading the file on a worker thread while its rows are written');
    expect([...(await checks(fine)).values()].every((result) => result.outcome === 'pass')).toBe(true);
  });

  it('a slice whose ledger row was deleted by hand loads again, its checks overwritten', async () => {
    const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
    await serveConstituents(slice.portfolioId, MONDAY, evenLines(4));
    expect((await run(slice.portfolioId, slice.reportType, MONDAY)).code).toBe(0);
    const warehouse = await rig.warehouse();
    await warehouse.db.deleteFrom('report_loads').where('portfolio_id', '=', slice.portfolioId).execute();
    await serveConstituents(slice.portfolioId, MONDAY, WEIGHING_0_8);
    const again = await run(slice.portfolioId, slice.reportType, MONDAY);
    expect(again.code, again.stdout).toBe(0);
    expect(await ledger(slice)).toMatchObject({ status: 'loaded', row_count: 4 });
    expect((await checks(slice)).get('weightsSum')).toMatchObject({ outcome: 'warn' });
    expect((await checks(slice)).size).toBe(5);
  });

  it('an empty answer believed as a restatement removes the rows and their checks with them', async () => {
    const slice: Slice = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
    await serveConstituents(slice.portfolioId, MONDAY, evenLines(3));
    expect((await run(slice.portfolioId, slice.reportType, MONDAY)).code).toBe(0);
    expect((await checks(slice)).size).toBe(5);
    rig.upstream.forget(slice.portfolioId, slice.reportType, MONDAY);
    const emptied = await run(slice.portfolioId, slice.reportType, MONDAY, { warehouse: { acceptEmptyRestatements: true } });
    expect(emptied.code, emptied.stdout).toBe(0);
    expect(await ledger(slice)).toMatchObject({ status: 'no_data', row_count: 0 });
    expect((await checks(slice)).size).toBe(0);
  });

  describe('shown by status, check and the dashboard', () => {
    let warned: Slice;
    let refused: Slice;

    beforeAll(async () => {
      warned = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      await serveConstituents(warned.portfolioId, FRIDAY_BEFORE, evenLines(4));
      await serveConstituents(warned.portfolioId, MONDAY, evenLines(2));
      expect((await run(warned.portfolioId, 'constituent.close', FRIDAY_BEFORE)).code).toBe(0);
      expect((await run(warned.portfolioId, 'constituent.close', MONDAY)).code).toBe(0);
      refused = { portfolioId: newPortfolio(), reportType: 'constituent.close', reportDate: MONDAY };
      const lines = evenLines(4);
      await serveConstituents(refused.portfolioId, MONDAY, [...lines.slice(0, 3), { ...lines[3]!, isin: lines[0]!.isin }]);
      expect((await run(refused.portfolioId, 'constituent.close', MONDAY, { checks: { duplicateIsin: { severity: 'fail' } } })).code).toBe(1);
    });

    it('status lists each missed check under the grid, and in --json', async () => {
      const range = ['--from', MONDAY, '--to', MONDAY, '--portfolios', `${warned.portfolioId},${refused.portfolioId}`, '--report-types', 'constituent.close'];
      const text = await rig.cli(['status', ...range]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toContain('Data-quality checks missed (2;');
      expect(text.stdout).toMatch(new RegExp(`warn\\s+${warned.portfolioId} constituent\\.close ${MONDAY}\\s+rowCountDrop: 2 rows against 4 on ${FRIDAY_BEFORE}`));
      expect(text.stdout).toMatch(new RegExp(`fail\\s+${refused.portfolioId} constituent\\.close ${MONDAY}\\s+duplicateIsin: 1 row repeats`));
      // The grid and the failures are still there, above.
      expect(text.stdout.indexOf('QUALITY_CHECK_FAILED')).toBeLessThan(text.stdout.indexOf('Data-quality checks missed'));

      const json = JSON.parse((await rig.cli(['status', ...range, '--json'])).stdout);
      expect(json.checks.total).toBe(2);
      expect(json.checks.misses).toEqual([
        expect.objectContaining({ portfolioId: warned.portfolioId, reportDate: MONDAY, check: 'rowCountDrop', outcome: 'warn', measured: 0.5, threshold: 0.25 }),
        expect.objectContaining({ portfolioId: refused.portfolioId, reportDate: MONDAY, check: 'duplicateIsin', outcome: 'fail', measured: 1, threshold: 0 }),
      ]);
    });

    it('check lists warnings without failing the night for them; a refused slice fails it as before', async () => {
      const onlyWarned = await rig.cli(['check', '--date', MONDAY, '--portfolios', String(warned.portfolioId), '--report-types', 'constituent.close', '--no-alert']);
      expect(onlyWarned.code, onlyWarned.stdout).toBe(0);
      expect(onlyWarned.stdout).toContain('OK: every slice is loaded or no_data.');
      expect(onlyWarned.stdout).toMatch(/Data-quality checks missed \(1;.*\):\n\s+warn\s+portfolio \d+, constituent\.close, 2024-05-06: rowCountDrop: 2 rows against 4/);

      const both = await rig.cli([
        'check',
        '--date',
        MONDAY,
        '--portfolios',
        `${warned.portfolioId},${refused.portfolioId}`,
        '--report-types',
        'constituent.close',
        '--no-alert',
        '--json',
      ]);
      expect(both.code).toBe(1);
      const json = JSON.parse(both.stdout);
      expect(json.status).toBe('failed');
      expect(json.failures.groups).toEqual([expect.objectContaining({ code: 'QUALITY_CHECK_FAILED', portfolioId: refused.portfolioId, slices: 1 })]);
      expect(json.checks.misses.map((miss: { check: string; outcome: string }) => `${miss.check} ${miss.outcome}`)).toEqual(['rowCountDrop warn', 'duplicateIsin fail']);
    });

    it("the dashboard's slice detail holds the checks of the slice's latest file", async () => {
      await rig.withDashboard(async (url) => {
        const detail = async (slice: Slice) => {
          const answer = await fetch(`${url}api/slice?portfolio=${slice.portfolioId}&reportType=${slice.reportType}&date=${slice.reportDate}`);
          expect(answer.status).toBe(200);
          return (await answer.json()) as { status: string; checks: { check: string; outcome: string; severity: string; measured: number; threshold: number; message: string }[] };
        };
        const warnedDetail = await detail(warned);
        expect(warnedDetail.status).toBe('loaded');
        expect(warnedDetail.checks.map((check) => check.check)).toEqual(['weightsSum', 'duplicateIsin', 'rowCountDrop', 'effectiveDate', 'positiveValues']);
        expect(warnedDetail.checks.find((check) => check.check === 'rowCountDrop')).toMatchObject({ outcome: 'warn', severity: 'warn', measured: 0.5, threshold: 0.25 });
        const refusedDetail = await detail(refused);
        expect(refusedDetail.status).toBe('failed');
        expect(refusedDetail.checks.find((check) => check.check === 'duplicateIsin')).toMatchObject({ outcome: 'fail', measured: 1 });
        expect((await detail({ ...warned, reportDate: WEDNESDAY })).checks).toEqual([]);
      });
    });
  });
});
