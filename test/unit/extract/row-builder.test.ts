import { LosslessNumber, parse, stringify } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { FileFormatError } from '../../../src/errors/sync-error.js';
import { constituentReport } from '../../../src/reports/constituent-report.js';
import { indexReport } from '../../../src/reports/index-report.js';
import { createRowBuilder } from '../../../src/extract/row-builder.js';
import { objectRecord } from '../../../src/extract/source-record.js';

const indexSlice = { portfolioId: 5, reportType: 'index' as const, reportDate: '2024-03-01' };
const closeSlice = { portfolioId: 5, reportType: 'constituent.close' as const, reportDate: '2024-03-01' };

describe('createRowBuilder', () => {
  it('stores an identifier trimmed of every Unicode space and in NFC, and other text as sent', () => {
    const build = createRowBuilder(constituentReport, closeSlice, 'f.zip');
    const isinOf = (isin: string, name = ' Acme\u00a0') =>
      build({ where: 'data.csv line 2', names: ['Effective Date', 'ISIN', 'Security Name'], values: ['2024-03-01', isin, name] }, 1);
    for (const spaced of ['XS0000000001 ', 'XS0000000001\u00a0', ' XS0000000001', '\tXS0000000001\r\n', '\u2003XS0000000001\u3000', 'XS0000000001\u0085', '\ufeffXS0000000001']) {
      expect(isinOf(spaced).isin).toBe('XS0000000001');
    }
    // Spaces inside are part of the value; a zero-width space is no Unicode space.
    expect(isinOf('XS00 00000001').isin).toBe('XS00 00000001');
    expect(isinOf('XS0000000001\u200b').isin).toBe('XS0000000001\u200b');
    // The same letters decomposed (NFD) and composed (NFC) are one value.
    expect(isinOf('E\u0301X0000000001').isin).toBe('\u00c9X0000000001');
    expect(isinOf('\u00c9X0000000001').isin).toBe('\u00c9X0000000001');
    // Text that is not an identifier keeps its spaces.
    expect(isinOf('XS0000000001').security_name).toBe(' Acme\u00a0');
    // An identifier of spaces alone is missing, as an empty key cell is.
    expect(() => isinOf('\u00a0 ')).toThrow(/key column isin \("ISIN"\) is empty/);
    const index = createRowBuilder(indexReport, indexSlice, 'f.json')(objectRecord('record 1', { effectiveDate: '2024-03-01', indexId: '\u00a0a-1 ' }), 1);
    expect(index.index_id).toBe('a-1');
  });

  it('types a JSON index record, keeping every decimal digit and the unlisted fields in extra', () => {
    const values = parse(
      '{"effectiveDate":"2024-03-01","indexId":"a-1","indexName":"Alpha","indexValue":1234.56789012345678901,"currency":"EUR",' +
        '"closeMarketValue":-1.5e3,"openMarketValue":0,"closeDivisor":2,"openDivisor":null,"indexType":"TR","weights":[1.10,2]}',
    ) as Record<string, unknown>;
    const row = createRowBuilder(indexReport, indexSlice, 'f.json')(objectRecord('record 1', values), 1);
    expect(row).toEqual({
      portfolio_id: 5,
      report_date: '2024-03-01',
      line_number: 1,
      effective_date: '2024-03-01',
      index_id: 'a-1',
      index_name: 'Alpha',
      index_value: '1234.56789012345678901',
      currency: 'EUR',
      close_market_value: '-1.5e3',
      open_market_value: '0',
      close_divisor: '2',
      open_divisor: null,
      extra: '{"indexType":"TR","weights":[1.10,2]}',
    });
  });

  it('maps CSV headers by name, whatever their order, and numbers the lines', () => {
    const build = createRowBuilder(constituentReport, closeSlice, 'f.zip');
    const row = build(
      {
        where: 'data.csv line 3',
        names: ['ISIN', 'Effective Date', 'Closing Fx', 'Exchange Code', 'Security Name', 'Corporate Action'],
        values: ['DE0001', '2024-03-01', '1.0000000000000000001', '', 'Acme, "Inc"', 'split'],
      },
      2,
    );
    expect(row).toMatchObject({
      report_type: 'constituent.close',
      line_number: 2,
      isin: 'DE0001',
      closing_fx: '1.0000000000000000001',
      exchange_code: null,
      security_name: 'Acme, "Inc"',
      closing_price: null,
      extra: '{"Corporate Action":"split"}',
    });
  });

  it('accepts JSON numbers in text columns and LosslessNumbers in decimal ones', () => {
    const row = createRowBuilder(
      constituentReport,
      closeSlice,
      'f.json',
    )(objectRecord('record 1', { effectiveDate: '2024-03-01', isin: new LosslessNumber('12345'), closingPrice: new LosslessNumber('0.10') }), 1);
    expect(row).toMatchObject({ isin: '12345', closing_price: '0.10' });
  });

  it.each([
    [{ 'Effective Date': '2024-03-01' }, /key column isin is missing/],
    [{ 'Effective Date': '2024-03-01', ISIN: ' ' }, /key column isin \("ISIN"\) is empty/],
    [{ 'Effective Date': '2024-02-30', ISIN: 'X' }, /column effective_date \("Effective Date"\): "2024-02-30" is not a date/],
    [{ 'Effective Date': '2024-03-01', ISIN: 'X', 'Closing Price': '1,234.5' }, /line 9, column closing_price \("Closing Price"\): "1,234.5" is not a decimal/],
    [{ 'Effective Date': '2024-03-01', ISIN: 'X', 'Closing Price': 'NaN' }, /"NaN" is not a decimal/],
    [{ 'Effective Date': '2024-03-01', ISIN: 'X', closingPrice: '1', 'Closing Price': '2' }, /both name column closing_price/],
    [{ 'Effective Date': '2024-03-01', ISIN: { nested: true } }, /expected a text, found an object/],
  ])('refuses %j, naming file, line and column', (values, message) => {
    const build = createRowBuilder(constituentReport, closeSlice, 'export.zip');
    let error: unknown;
    try {
      build(objectRecord('data.csv line 9', values), 1);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FileFormatError);
    expect((error as Error).message).toMatch(/^export\.zip, data\.csv line 9/);
    expect((error as Error).message).toMatch(message);
  });
});

describe('extra, as lossless-json writes it', () => {
  it.each([
    '{"a":"x \\"q\\" \\\\ \\u0001 € 😀","b":1.50000000000000000001,"c":-2E+5,"d":true,"e":false,"f":null}',
    '{"nested":{"n":1.10,"list":[1,"two",{"x":null}]},"flat":"y"}',
    '{"__proto__":{"inherited":1},"own":2}',
    '{"1":"one","b":"bee","0":"zero"}',
  ])('for %s', (json) => {
    const values = { effectiveDate: '2024-03-01', indexId: 'a-1', ...(parse(json) as Record<string, unknown>) };
    const row = createRowBuilder(indexReport, indexSlice, 'f.json')(objectRecord('record 1', values), 1);
    const extra = { ...values } as Record<string, unknown>;
    delete extra.effectiveDate;
    delete extra.indexId;
    expect(row.extra).toBe(stringify(extra));
  });

  it('for CSV columns in file order, names that look like array indexes first as an object lists them, and a hundred thousand of them', () => {
    const build = createRowBuilder(indexReport, indexSlice, 'f.zip');
    const csv = (names: string[]) =>
      build({ where: 'line 2', names: ['Effective Date', 'Index Id', ...names], values: ['2024-03-01', 'a-1', ...names.map((name) => `v${name}`)] }, 1);
    expect(csv(['b', 'a', '__proto__']).extra).toBe('{"b":"vb","a":"va","__proto__":"v__proto__"}');
    expect(csv(['b', '7', 'a', '1']).extra).toBe('{"1":"v1","7":"v7","b":"vb","a":"va"}');
    const many = Array.from({ length: 100_000 }, (_, i) => `k${i}`);
    expect(JSON.parse(csv(many).extra as string)).toEqual(Object.fromEntries(many.map((name) => [name, `v${name}`])));
  });
});
