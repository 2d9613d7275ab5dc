import { describe, expect, it } from 'vitest';
import { decimalMisfit, MYSQL_DECIMALS, POSTGRES_DECIMALS, SQLITE_DECIMALS } from '../../../src/reports/decimal-capacity.js';

const TWENTY = '12345678901234567890';
const pgScale = (digits: number) => `1.${'0'.repeat(digits - 1)}1`;

describe('decimalMisfit', () => {
  it.each([
    ['SQLite', SQLITE_DECIMALS],
    ['Postgres', POSTGRES_DECIMALS],
  ])('refuses on %s a value beyond the sizes a 64-bit float holds at full precision, naming the range', (_name, capacity) => {
    expect(decimalMisfit('1e-400', capacity)).toMatch(/"1e-400" is too small to keep exactly: .* from 2\.2250738585072014e-308 .*SQLite would store 0\)/);
    expect(decimalMisfit('-1E-400', capacity)).toMatch(/too small/);
    expect(decimalMisfit('1e-320', capacity)).toMatch(/too small.*SQLite would store 1e-320/);
    expect(decimalMisfit('2.2250738585072013e-308', capacity)).toMatch(/too small/);
    expect(decimalMisfit('1e400', capacity)).toMatch(/"1e400" is too large: .* up to 1\.7976931348623157e308/);
    expect(decimalMisfit('1e999', capacity)).toMatch(/too large/);
    expect(decimalMisfit('1.7976931348623158e308', capacity)).toMatch(/too large/);
    expect(decimalMisfit(`1${'0'.repeat(309)}`, capacity)).toMatch(/too large/);
    expect(decimalMisfit('1e99999999999999999999', capacity)).toMatch(/too large/);
    // The neighbours at the edges load, and so does zero however it is written.
    expect(decimalMisfit('2.2250738585072014e-308', capacity)).toBeUndefined();
    expect(decimalMisfit('-1.7976931348623157E+308', capacity)).toBeUndefined();
    expect(decimalMisfit('1e-307', capacity)).toBeUndefined();
    expect(decimalMisfit('0e-400', capacity)).toBeUndefined();
    expect(decimalMisfit('-0.000', capacity)).toBeUndefined();
    expect(decimalMisfit('1e-5', capacity)).toBeUndefined();
    expect(decimalMisfit('1.5E+3', capacity)).toBeUndefined();
  });

  it('keeps on Postgres every digit, up to NUMERIC’s 16383 after the point', () => {
    expect(decimalMisfit(TWENTY, POSTGRES_DECIMALS)).toBeUndefined();
    expect(decimalMisfit(`0.${TWENTY}`, POSTGRES_DECIMALS)).toBeUndefined();
    expect(decimalMisfit(`${TWENTY}.${TWENTY}e-200`, POSTGRES_DECIMALS)).toBeUndefined();
    expect(decimalMisfit(pgScale(16_383), POSTGRES_DECIMALS)).toBeUndefined();
    expect(decimalMisfit(pgScale(16_384), POSTGRES_DECIMALS)).toMatch(/^"1\.0000.*…" has 16384 digits after the point; the column \(Postgres NUMERIC\) keeps at most 16383$/);
    expect(decimalMisfit(`1.${'0'.repeat(16_383)}`, POSTGRES_DECIMALS)).toBeUndefined();
    expect(decimalMisfit(`1.${'0'.repeat(16_384)}`, POSTGRES_DECIMALS)).toMatch(/16384 digits after the point/);
    expect(decimalMisfit('0e-16384', POSTGRES_DECIMALS)).toMatch(/16384 digits after the point/);
    expect(decimalMisfit('1.5e-300', POSTGRES_DECIMALS)).toBeUndefined();
  });

  it('leaves SQLite to keep the nearest 64-bit float of a value of more digits (a known limit), within the range', () => {
    for (const value of ['0.1', '123456789012345', '0.30000000000000004', '105.20697588613054211', TWENTY, `0.${'1'.repeat(100_000)}`, '1.5e-300', '5E-1']) {
      expect(decimalMisfit(value, SQLITE_DECIMALS)).toBeUndefined();
    }
  });

  it('keeps on MySQL every digit DECIMAL(65,30) holds, 35 before the point and 30 after, and refuses a value it would round', () => {
    for (const value of [
      TWENTY,
      '105.20697588613054211',
      '-0.00000000000000000012345',
      `${'9'.repeat(35)}.${'9'.repeat(30)}`,
      `1.${'0'.repeat(40)}`,
      '1.5E+3',
      '-0.000',
      '0e-400',
      '1e-30',
    ]) {
      expect(decimalMisfit(value, MYSQL_DECIMALS)).toBeUndefined();
    }
    expect(decimalMisfit(`1${'0'.repeat(35)}`, MYSQL_DECIMALS)).toMatch(/^"10{35}" has 36 digits before the point; the column \(MySQL DECIMAL\(65,30\)\) keeps at most 35$/);
    expect(decimalMisfit('1e35', MYSQL_DECIMALS)).toMatch(/36 digits before the point/);
    expect(decimalMisfit(`0.${'0'.repeat(29)}12`, MYSQL_DECIMALS)).toMatch(/has 31 digits after the point; the column \(MySQL DECIMAL\(65,30\)\) keeps at most 30$/);
    expect(decimalMisfit('1e-31', MYSQL_DECIMALS)).toMatch(/31 digits after the point/);
    expect(decimalMisfit('2.2250738585072014e-308', MYSQL_DECIMALS)).toMatch(/digits after the point/);
    // The range every warehouse shares still comes first.
    expect(decimalMisfit('1e400', MYSQL_DECIMALS)).toMatch(/too large/);
  });
});
