import { describe, expect, it } from 'vitest';
import type { SettingsInput } from '../../src/config/settings-schema.js';
import type { Slice } from '../../src/slice/slice.js';
import { useConstituentRig, type ConstituentLine } from '../helpers/constituent-rig.js';
import type { CliResult } from '../helpers/sync-rig.js';
import { DIALECTS } from '../helpers/temp-warehouse.js';

/*
 * Checks that compare exactly (issue 25, finding 6), through the real CLI, on both warehouses,
 * with files an upstream of the test's own serves: an ISIN with a space or a no-break space around
 * it is the same ISIN to duplicateIsin; a decimal the column cannot keep fails the file as
 * FILE_INVALID rather than being stored as something else; weights are summed exactly, so a
 * tolerance allows what it says at both sides of its boundary.
 */

const MONDAY = '2024-05-06';
const REFUSING: SettingsInput = { checks: { weightsSum: { severity: 'fail' }, duplicateIsin: { severity: 'fail' }, positiveValues: { severity: 'fail' } } };

describe.each(DIALECTS)('checks that compare exactly, in %s', (dialect) => {
  const rig = useConstituentRig(dialect);
  const { ledger } = rig;
  let nextPortfolio = 7001;

  const newSlice = (): Slice => ({ portfolioId: nextPortfolio++, reportType: 'constituent.close', reportDate: MONDAY });

  async function serve(slice: Slice, lines: readonly ConstituentLine[]): Promise<void> {
    await rig.serveConstituents(slice.portfolioId, slice.reportDate, lines);
  }

  async function run(slice: Slice, settings: SettingsInput = REFUSING): Promise<CliResult> {
    return rig.cliOnUpstream(['run', '--from', MONDAY, '--to', MONDAY, '--portfolios', String(slice.portfolioId), '--report-types', slice.reportType], { settings });
  }

  async function check(slice: Slice, name: string) {
    const row = (await rig.checks(slice)).get(name);
    if (!row) throw new Error(`no ${name} check for ${slice.portfolioId}`);
    return row;
  }

  async function rows(slice: Slice) {
    return (await rig.warehouse()).db
      .selectFrom('constituent_report')
      .select(['isin', 'closing_price'])
      .where('portfolio_id', '=', slice.portfolioId)
      .where('report_date', '=', slice.reportDate)
      .orderBy('line_number')
      .execute();
  }

  describe('duplicateIsin', () => {
    it('refuses ISINs that differ only by a space, a no-break space or their Unicode form, storing each trimmed and in NFC', async () => {
      const slice = newSlice();
      const good = [
        { isin: ' XS0000000001\u00a0', weight: '0.25' },
        { isin: 'XS0000000002 ', weight: '0.25' },
        { isin: '\u00c9X0000000003', weight: '0.25' },
        { isin: 'XS0000000004', weight: '0.25' },
      ];
      await serve(slice, good);
      const loaded = await run(slice);
      expect(loaded.code, loaded.stdout + loaded.logs).toBe(0);
      expect((await rows(slice)).map((row) => row.isin)).toEqual(['XS0000000001', 'XS0000000002', '\u00c9X0000000003', 'XS0000000004']);
      expect(await check(slice, 'duplicateIsin')).toMatchObject({ outcome: 'pass', measured: 0 });

      for (const repeat of ['XS0000000004 ', 'XS0000000004\u00a0', '\u2003XS0000000004', 'E\u0301X0000000003']) {
        await serve(slice, [...good.slice(0, 3), { isin: 'XS0000000004', weight: '0.125' }, { isin: repeat, weight: '0.125' }]);
        const refused = await run(slice);
        expect(refused.code, refused.stdout).toBe(1);
        expect(await ledger(slice)).toMatchObject({ status: 'failed', error_code: 'QUALITY_CHECK_FAILED', row_count: 4 });
        expect(await check(slice, 'duplicateIsin')).toMatchObject({ outcome: 'fail', measured: 1 });
        expect((await ledger(slice)).error).toMatch(/1 row repeats the isin of an earlier row \(first: "(XS0000000004|\u00c9X0000000003)" on row 5\)/);
      }
    });
  });

  describe('decimals the column cannot keep', () => {
    it.each([
      ['1e-400', /is too small to keep exactly: a decimal other than 0 is loaded from 2\.2250738585072014e-308 .*SQLite would store 0\)/],
      ['1e400', /is too large: a decimal is loaded up to 1\.7976931348623157e308/],
    ])('refuse %s as FILE_INVALID, naming the line, column and value, and keep the rows loaded before', async (price, says) => {
      const slice = newSlice();
      await serve(slice, [
        { isin: 'XS0000000001', weight: '0.5' },
        { isin: 'XS0000000002', weight: '0.5' },
      ]);
      expect((await run(slice)).code).toBe(0);
      const before = await rows(slice);
      await serve(slice, [
        { isin: 'XS0000000001', weight: '0.5' },
        { isin: 'XS0000000002', weight: '0.5', price },
      ]);
      const refused = await run(slice);
      expect(refused.code, refused.stdout).toBe(1);
      const failed = await ledger(slice);
      expect(failed).toMatchObject({ status: 'failed', error_code: 'FILE_INVALID', row_count: 2, attempts: 1 });
      expect(failed.error).toContain(`constituents.csv line 3, column closing_price ("Closing Price"): "${price}"`);
      expect(failed.error).toMatch(says);
      expect(await rows(slice)).toEqual(before);
    });

    it('load their neighbours exactly: the smallest full-precision size, an exponent form, and 20 digits where NUMERIC keeps them', async () => {
      const slice = newSlice();
      // MySQL's DECIMAL(65,30) keeps 30 digits after the point: its smallest is 1e-30, and 2.2250738585072014e-308 is refused.
      const prices = [dialect === 'mysql' ? '1e-30' : '2.2250738585072014e-308', '1e-5', '12345678901234567890.5'];
      await serve(
        slice,
        prices.map((price, i) => ({ isin: `XS000000000${i}`, weight: i === 0 ? '1' : '0', price })),
      );
      const loaded = await run(slice, {});
      expect(loaded.code, loaded.stdout + loaded.logs).toBe(0);
      const held = (await rows(slice)).map((row) => row.closing_price);
      if (dialect === 'postgres') expect(held).toEqual([`0.${'0'.repeat(307)}22250738585072014`, '0.00001', '12345678901234567890.5']);
      else if (dialect === 'mysql') expect(held).toEqual([`0.${'0'.repeat(29)}1`, '0.00001', '12345678901234567890.5']);
      else expect(held.map(Number)).toEqual([2.2250738585072014e-308, 0.00001, 12345678901234567000]);
    });

    it('refuse, in Postgres, more digits after the point than NUMERIC keeps (16,383), and load exactly that many', async () => {
      const slice = newSlice();
      // MySQL's DECIMAL(65,30) keeps 30.
      const most = `0.${'0'.repeat(dialect === 'mysql' ? 29 : 16_382)}5`;
      await serve(slice, [{ isin: 'XS0000000001', weight: '1', price: `1${most.slice(1)}` }]);
      expect((await run(slice)).code).toBe(0);
      await serve(slice, [{ isin: 'XS0000000001', weight: '1', price: `1${most.slice(1)}0` }]);
      const result = await run(slice);
      if (dialect === 'postgres') {
        expect(result.code).toBe(1);
        expect((await ledger(slice)).error).toMatch(
          /line 2, column closing_price \("Closing Price"\): "1\.0000.*…" has 16384 digits after the point; the column \(Postgres NUMERIC\) keeps at most 16383/,
        );
        expect(String((await rows(slice))[0]!.closing_price)).toBe(`1${most.slice(1)}`);
      } else if (dialect === 'mysql') {
        // A zero after the last digit DECIMAL keeps changes no value: it loads, and reads back as the same number.
        expect(result.code, result.stdout).toBe(0);
        expect(String((await rows(slice))[0]!.closing_price)).toBe(`1${most.slice(1)}`);
      } else {
        // SQLite keeps the nearest 64-bit float (a known limit): 1, either way.
        expect(result.code, result.stdout).toBe(0);
        expect(Number((await rows(slice))[0]!.closing_price)).toBe(1);
      }
    });
  });

  describe('weightsSum', () => {
    it.each([
      ['0.5 + 0.499', 'pass', ['0.5', '0.499']],
      ['0.5 + 0.501', 'pass', ['0.5', '0.501']],
      ['0.5 + 0.4989999', 'fail', ['0.5', '0.4989999']],
      ['0.5 + 0.5010001', 'fail', ['0.5', '0.5010001']],
      ['60 + 39.9 (percent)', 'pass', ['60', '39.9']],
      ['60 + 39.8999 (percent)', 'fail', ['60', '39.8999']],
      ['1,000 × 0.000999', 'pass', Array<string>(1000).fill('0.000999')],
      ['1,000 × 0.0009989', 'fail', Array<string>(1000).fill('0.0009989')],
    ])('with a tolerance of 0.001, weights %s: %s', async (_name, outcome, weights) => {
      const slice = newSlice();
      await serve(
        slice,
        weights.map((weight, i) => ({ isin: `XS${String(i).padStart(10, '0')}`, weight })),
      );
      const result = await run(slice);
      expect(result.code, result.stdout).toBe(outcome === 'pass' ? 0 : 1);
      expect(await check(slice, 'weightsSum')).toMatchObject({ outcome, threshold: 0.001 });
      expect((await ledger(slice)).status).toBe(outcome === 'pass' ? 'loaded' : 'failed');
    });
  });
});
