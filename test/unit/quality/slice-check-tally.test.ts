import { describe, expect, it } from 'vitest';
import { settingsSchema } from '../../../src/config/settings-schema.js';
import { createRowValuesBuilder } from '../../../src/extract/row-builder.js';
import { SliceCheckTally, type CheckSettings, type RepeatedValues } from '../../../src/quality/slice-check-tally.js';
import { REPORT_REGISTRY } from '../../../src/reports/report-registry.js';
import type { Slice } from '../../../src/slice/slice.js';
import { objectRecord } from '../../../src/extract/source-record.js';

const slice: Slice = { portfolioId: 1001, reportType: 'constituent.close', reportDate: '2024-05-06' };
const DEFAULTS: CheckSettings = settingsSchema.parse({}).checks;
/** Every check set to refuse a file it misses, as a team that wants bad files kept out sets them. */
const REFUSING: CheckSettings = settingsSchema.parse({
  checks: {
    weightsSum: { severity: 'fail' },
    duplicateIsin: { severity: 'fail' },
    rowCountDrop: { severity: 'fail' },
    effectiveDate: { severity: 'fail' },
    positiveValues: { severity: 'fail' },
  },
}).checks;

/** Tallies constituent records (CSV header names) as the pipeline types them, then evaluates. */
function tally(records: Record<string, string>[], settings: CheckSettings = DEFAULTS, previous?: { reportDate: string; rowCount: number }, repeated?: RepeatedValues) {
  const definition = REPORT_REGISTRY[slice.reportType];
  const build = createRowValuesBuilder(definition, slice, 'test.zip');
  const checks = new SliceCheckTally(definition, slice, settings);
  for (const [i, values] of records.entries()) checks.observe(build(objectRecord(`line ${i + 2}`, values), i + 1));
  return new Map(checks.evaluate({ previous, repeated }).map((result) => [result.check, result]));
}

const row = (isin: string, weight: string, extra: Record<string, string> = {}) => ({
  'Effective Date': '2024-05-06',
  ISIN: isin,
  'Closing Price': '10',
  'Closing Fx': '1',
  'Index Shares': '5',
  'Index Weighting': weight,
  ...extra,
});

describe('SliceCheckTally', () => {
  it('passes a file whose weights sum to 1 within the tolerance, and to 100 as percentages', () => {
    expect(tally([row('A', '0.3333'), row('B', '0.3333'), row('C', '0.3334')]).get('weightsSum')).toMatchObject({ outcome: 'pass' });
    expect(tally([row('A', '60'), row('B', '39.95')]).get('weightsSum')).toMatchObject({ outcome: 'pass', threshold: 0.001 });
    const off = tally([row('A', '60'), row('B', '39.8')], REFUSING).get('weightsSum')!;
    expect(off).toMatchObject({ outcome: 'fail', severity: 'fail' });
    expect(off.measured).toBeCloseTo(0.002, 12);
    expect(off.message).toBe(
      "weightsSum: the weights (index_weighting) of 2 rows sum to 99.8, 0.2 % away from 100 (checks.weightsSum.tolerance allows 0.1 %) (checks.weightsSum.severity 'warn' would load it with a warning)",
    );
  });

  it('takes the repeats the database counted once two rows share a hash, quoting the first one printable', () => {
    const rows = [row('A', '0.5'), row('B\u001b[31m', '0.25'), row('B\u001b[31m', '0.25')];
    const result = tally(rows, REFUSING, undefined, { rows: 1, example: { value: 'B\u001b[31m', row: 3 } }).get('duplicateIsin')!;
    expect(result).toMatchObject({ outcome: 'fail', measured: 1, threshold: 0 });
    expect(result.message).not.toContain('\u001b');
    expect(result.message).toContain('on row 3');
    // Distinct values share no hash, so what the database would say is never asked for.
    const distinct = Array.from({ length: 20_000 }, (_, i) => row(`XS${String(i).padStart(10, '0')}`, '0.00005'));
    expect(tally(distinct, DEFAULTS, undefined, { rows: 99 }).get('duplicateIsin')).toMatchObject({ outcome: 'pass', measured: 0 });
  });

  it('sees an ISIN with a space around it, or in another Unicode form, as a repeat', () => {
    const definition = REPORT_REGISTRY[slice.reportType];
    const build = createRowValuesBuilder(definition, slice, 'test.zip');
    const mayRepeat = (isins: string[]) => {
      const checks = new SliceCheckTally(definition, slice, REFUSING);
      for (const [i, isin] of isins.entries()) checks.observe(build(objectRecord(`line ${i + 2}`, row(isin, '0.5')), i + 1));
      return checks.mayRepeat;
    };
    expect(mayRepeat(['XS0000000001', 'XS0000000001 '])).toBe(true);
    expect(mayRepeat(['XS0000000001', 'XS0000000001\u00a0'])).toBe(true);
    expect(mayRepeat([' XS0000000001', 'XS0000000001'])).toBe(true);
    expect(mayRepeat(['\u00c9X0000000001', 'E\u0301X0000000001'])).toBe(true);
    expect(mayRepeat(['XS0000000001', 'XS0000000002 '])).toBe(false);
    // The hashes' room grows as rows come: a repeat far apart is still seen, and a file of no rows has none.
    const many = Array.from({ length: 3_000 }, (_, i) => `XS${String(i).padStart(10, '0')}`);
    expect(mayRepeat(many)).toBe(false);
    expect(mayRepeat([...many, many[0]!])).toBe(true);
    expect(mayRepeat([])).toBe(false);
  });

  it('measures the drop in rows against the previous loaded date, and passes with none to compare with', () => {
    const rows = [row('A', '0.5'), row('B', '0.5')];
    expect(tally(rows, DEFAULTS, { reportDate: '2024-05-03', rowCount: 4 }).get('rowCountDrop')).toMatchObject({ outcome: 'warn', severity: 'warn', measured: 0.5 });
    expect(tally(rows, DEFAULTS, { reportDate: '2024-05-03', rowCount: 2 }).get('rowCountDrop')).toMatchObject({ outcome: 'pass', measured: 0 });
    expect(tally(rows, DEFAULTS, { reportDate: '2024-05-03', rowCount: 1 }).get('rowCountDrop')).toMatchObject({ outcome: 'pass', measured: 0 });
    expect(tally(rows, DEFAULTS, undefined).get('rowCountDrop')).toMatchObject({ outcome: 'pass', measured: 0 });
  });

  it('holds effective dates to the report date and the business days before it', () => {
    const dated = (date: string) => [row('A', '0.5', { 'Effective Date': date }), row('B', '0.5')];
    expect(tally(dated('2024-04-29')).get('effectiveDate')).toMatchObject({ outcome: 'pass', measured: 5, threshold: 5 });
    expect(tally(dated('2024-04-26'), REFUSING).get('effectiveDate')).toMatchObject({ outcome: 'fail', measured: 6 });
    expect(tally(dated('2024-05-07'), REFUSING).get('effectiveDate')).toMatchObject({ outcome: 'fail', measured: -1 });
  });

  it('finds values not above zero in the columns the definition names, leaving empty cells alone', () => {
    const result = tally([row('A', '0.5', { 'Closing Price': '0.000' }), row('B', '0.5', { 'Closing Fx': '' }), row('C', '0', { 'Index Shares': '-1' })], REFUSING).get(
      'positiveValues',
    )!;
    expect(result).toMatchObject({ outcome: 'fail', measured: 2 });
    expect(result.message).toContain('first: closing_price 0.000 on row 1');
  });

  it('warns, by default, of a miss of every check: the file is loaded, the miss recorded', () => {
    const results = tally(
      [row('A', '0.7', { 'Effective Date': '2024-04-26' }), row('A', '0.7', { 'Closing Price': '-1' })],
      DEFAULTS,
      { reportDate: '2024-05-03', rowCount: 4 },
      { rows: 1, example: { value: 'A', row: 2 } },
    );
    expect([...results.values()].map((result) => `${result.check} ${result.severity} ${result.outcome}`)).toEqual([
      'weightsSum warn warn',
      'duplicateIsin warn warn',
      'rowCountDrop warn warn',
      'effectiveDate warn warn',
      'positiveValues warn warn',
    ]);
    // A warning names what was found and the limit's setting, not a severity to change.
    expect(results.get('weightsSum')!.message).not.toContain("severity 'warn'");
  });

  it('records nothing for a check set to off, and a warn for one set to warn', () => {
    const settings = settingsSchema.parse({ checks: { weightsSum: { severity: 'warn' }, duplicateIsin: { severity: 'off' }, rowCountDrop: { severity: 'off' } } }).checks;
    const results = tally([row('A', '0.4'), row('A', '0.4')], settings);
    expect([...results.keys()]).toEqual(['weightsSum', 'effectiveDate', 'positiveValues']);
    expect(results.get('weightsSum')).toMatchObject({ outcome: 'warn', severity: 'warn' });
  });

  it('sums weights exactly, so a tolerance allows what it says at both sides of its boundary', () => {
    const weightsSum = (weights: string[], settings = REFUSING) =>
      tally(
        weights.map((weight, i) => row(`XS${String(i).padStart(10, '0')}`, weight)),
        settings,
      ).get('weightsSum')!;
    // In doubles 0.5 + 0.499 is 0.0010000000000000009 away from 1, past a tolerance of 0.001.
    expect(weightsSum(['0.5', '0.499'])).toMatchObject({ outcome: 'pass', measured: 0.001, threshold: 0.001 });
    expect(weightsSum(['0.5', '0.499']).message).toContain('sum to 0.999, 0.1 % away from 1');
    expect(weightsSum(['0.5', '0.501'])).toMatchObject({ outcome: 'pass' });
    expect(weightsSum(['0.5', '0.4989999'])).toMatchObject({ outcome: 'fail' });
    expect(weightsSum(['0.5', '0.5010000001'])).toMatchObject({ outcome: 'fail' });
    // A hair either side of the boundary, past what a double tells apart from 0.999.
    expect(weightsSum(['0.5', '0.49900000000000000000000001'])).toMatchObject({ outcome: 'pass' });
    expect(weightsSum(['0.5', '0.49899999999999999999999999'])).toMatchObject({ outcome: 'fail' });
    // Percentages: 100 × the tolerance is allowed, exactly.
    expect(weightsSum(['60', '39.9'])).toMatchObject({ outcome: 'pass' });
    expect(weightsSum(['60', '39.8999'])).toMatchObject({ outcome: 'fail' });
    expect(weightsSum(['60', '40.1', '1e-1', '-1E-1'])).toMatchObject({ outcome: 'pass' });
    // A thousand weights of 0.001 are exactly 1 (in doubles 1.0000000000000007), with a tolerance of 0.
    const exact = settingsSchema.parse({ checks: { weightsSum: { severity: 'fail', tolerance: 0 } } }).checks;
    expect(weightsSum(Array<string>(1000).fill('0.001'), exact)).toMatchObject({ outcome: 'pass', measured: 0 });
    expect(weightsSum([...Array<string>(999).fill('0.001'), '0.0010000000000000000001'], exact)).toMatchObject({ outcome: 'fail' });
    // A weight with an exponent or more digits than a double keeps is summed exactly too.
    expect(weightsSum(['5E-1', '0.4990000000000000000000000000000000000001', '9.99999999999999999999999999999999999999E-41'])).toMatchObject({ outcome: 'pass' });
  });

  it("hands its exact sum from the thread that typed the rows to the slice's tally", () => {
    const definition = REPORT_REGISTRY[slice.reportType];
    const build = createRowValuesBuilder(definition, slice, 'test.zip');
    const onWorker = new SliceCheckTally(definition, slice, REFUSING);
    for (const [i, weight] of ['0.5', '0.499'].entries()) onWorker.observe(build(objectRecord(`line ${i + 2}`, row(`I${i}`, weight)), i + 1));
    const seen = structuredClone(onWorker.tallied());
    expect(seen.weightSum).toBe('0.999');
    const adopting = new SliceCheckTally(definition, slice, REFUSING);
    adopting.adopt(seen);
    expect(adopting.evaluate().find((result) => result.check === 'weightsSum')).toMatchObject({ outcome: 'pass', measured: 0.001 });
  });
});
