import { describe, expect, it } from 'vitest';
import { toDecimalText } from '../../../src/reports/decimal-text.js';

describe('toDecimalText', () => {
  it('keeps every digit of a decimal as written', () => {
    expect(toDecimalText('1234.56789012345678901')).toBe('1234.56789012345678901');
    expect(toDecimalText(' -0.5 ')).toBe('-0.5');
    expect(toDecimalText('1.5E-7')).toBe('1.5E-7');
    expect(toDecimalText('42')).toBe('42');
    expect(toDecimalText('.5')).toBe('.5');
    // Of the right form: whether a column keeps it is decimalMisfit's to say.
    expect(toDecimalText('1e999')).toBe('1e999');
  });

  it.each(['1,234.5', 'NaN', 'Infinity', 'abc', '1.2.3', '--1', '0x10', ''])('refuses %j', (text) => {
    expect(toDecimalText(text)).toBeUndefined();
  });
});
