import { describe, expect, it } from 'vitest';
import { compareExact, exactText, parseExactDecimal } from '../../../src/reports/exact-decimal.js';
import { ExactDecimalSum } from '../../../src/quality/exact-decimal-sum.js';

const sum = (texts: string[]) => {
  const total = new ExactDecimalSum();
  for (const text of texts) expect(total.add(text)).toBe(true);
  return exactText(total.value);
};

describe('ExactDecimalSum', () => {
  it('adds decimal texts exactly, where doubles would not', () => {
    expect(sum(['0.1', '0.2'])).toBe('0.3');
    expect(sum(['0.5', '0.499'])).toBe('0.999');
    expect(sum(Array<string>(1000).fill('0.001'))).toBe('1');
    expect(sum(['-0.25', '+0.75', '.5', '1.'])).toBe('2');
  });

  it('keeps every digit past what a double holds, and exponents of either sign', () => {
    expect(sum(['12345678901234567890.123456789', '0.000000001'])).toBe('12345678901234567890.12345679');
    expect(sum(['1e-30', '1E+3', '2.5e-1'])).toBe('1000.250000000000000000000000000001');
    expect(sum(['9007199254740993', '1'])).toBe('9007199254740994');
    expect(sum(['-1e-400', '1e-400'])).toBe('0');
  });

  it('moves to a bigint when the running sum would pass 2^53 units, exactly', () => {
    expect(sum(Array<string>(20).fill('999999999999999'))).toBe('19999999999999980');
    expect(sum(['0.000000000000001', ...Array<string>(3).fill('9.99999999999999')])).toBe('29.999999999999971');
  });

  it('sums weights of 20 digits and more exactly, whether they fit the limbs or not', () => {
    expect(sum(Array<string>(100_000).fill('0.00001000000000000001'))).toBe('1.000000000000001');
    expect(sum(['0.12345678901234567890123456789', '-0.12345678901234567890123456788'])).toBe('0.00000000000000000000000000001');
    // 40 digits of units fill the limbs; 41 and a text past 60 characters go to the bigint.
    expect(sum(['1234567890123456789012345678901234567890', '0.1'])).toBe('1234567890123456789012345678901234567890.1');
    expect(sum([`0.${'9'.repeat(70)}`, `0.${'0'.repeat(69)}1`])).toBe('1');
    expect(sum(['-5', '2.5', '+2.5', '0.000'])).toBe('0');
  });

  it('refuses what is not a decimal, adding nothing', () => {
    const total = new ExactDecimalSum();
    for (const text of ['', '.', 'e5', '1,5', 'NaN', '0x10', '1e', '1.2.3', '-', '+.']) expect(total.add(text)).toBe(false);
    expect(exactText(total.value)).toBe('0');
  });
});

describe('compareExact', () => {
  it('orders decimals of any scale exactly', () => {
    const d = (text: string) => parseExactDecimal(text)!;
    expect(compareExact(d('0.001'), d('0.0010000000000000000001'))).toBe(-1);
    expect(compareExact(d('1e-3'), d('0.00100'))).toBe(0);
    expect(compareExact(d('-0'), d('0'))).toBe(0);
    expect(compareExact(d('100'), d('99.99999999999999999999'))).toBe(1);
  });
});
