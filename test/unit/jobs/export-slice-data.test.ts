import { describe, expect, it } from 'vitest';
import { parseExportSliceData } from '../../../jobs/export-slice/data.js';
import { refusalOf } from '../../helpers/refusal.js';

const SLICE = { portfolioId: 1001, reportType: 'index', reportDate: '2024-01-03' } as const;

/** The code and message `parseExportSliceData` throws for `data`. */
const refusal = (data: unknown) => refusalOf(parseExportSliceData, data);

describe('an export job’s data', () => {
  it('is the slice, with force when it says `force: true`', () => {
    expect(parseExportSliceData(SLICE)).toEqual({ slice: SLICE, force: false });
    expect(parseExportSliceData({ ...SLICE, force: true })).toEqual({ slice: SLICE, force: true });
    expect(parseExportSliceData({ ...SLICE, force: false })).toEqual({ slice: SLICE, force: false });
  });

  it('keeps nothing but the slice’s own fields', () => {
    expect(parseExportSliceData({ ...SLICE, token: 'secret', extra: 1 })).toEqual({ slice: SLICE, force: false });
  });

  it.each([
    ['not an object', 'a string', /^data is not a valid slice: a slice must be an object/],
    ['a portfolioId that is not a portfolio id', { ...SLICE, portfolioId: '1001;DROP TABLE report_loads' }, /^data is not a valid slice: portfolioId "1001;DROP TABLE/],
    ['a portfolioId of zero', { ...SLICE, portfolioId: 0 }, /^data is not a valid slice: portfolioId 0 is not a portfolio id/],
    ['an unknown reportType', { ...SLICE, reportType: 'index/../x' }, /^data is not a valid slice: reportType "index\/..\/x" is not a report type/],
    ['a reportDate not in YYYY-MM-DD form', { ...SLICE, reportDate: '2024-1-3' }, /^data is not a valid slice: reportDate "2024-1-3" is not a date/],
    ['a force that is not a boolean', { ...SLICE, force: 'yes' }, /^data is not a valid slice: force "yes" is not true or false$/],
  ])('is refused with USAGE_INVALID naming the field for %s', (_case, data, message) => {
    const { code, message: text } = refusal(data);
    expect(code).toBe('USAGE_INVALID');
    expect(text).toMatch(message);
  });
});
