import { describe, expect, it } from 'vitest';
import { mysqlTimestamp } from '../../../../src/warehouse/mysql/mysql-timestamp.js';

describe('mysqlTimestamp', () => {
  it('keeps the milliseconds the server gave', () => {
    expect(mysqlTimestamp('2026-11-22 13:00:00.123')).toBe('2026-11-22T13:00:00.123Z');
  });

  it('writes .000 where the driver left out a fraction of zeros, so ledger times sort as text', () => {
    const whole = mysqlTimestamp('2026-11-27 22:10:02');
    expect(whole).toBe('2026-11-27T22:10:02.000Z');
    const later = mysqlTimestamp('2026-11-27 22:10:02.500');
    expect([later, whole].sort()).toEqual([whole, later]);
  });

  it('refuses text that is not a DATETIME, naming it', () => {
    expect(() => mysqlTimestamp('0000-00-00 00:00:00')).toThrow(/"0000-00-00 00:00:00", which is not a DATETIME/);
  });
});
