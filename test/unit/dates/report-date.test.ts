import { afterEach, describe, expect, it } from 'vitest';
import { isIsoDate } from '../../../src/dates/is-iso-date.js';
import { countIsoDates, eachIsoDate, isoWeekEnd, monthEnd, shiftIsoDate, todayIn, weekdayOf } from '../../../src/dates/report-date.js';

const zone = process.env.TZ;
afterEach(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

describe('report dates', () => {
  it('knows a real calendar date from a look-alike', () => {
    expect(isIsoDate('2024-02-29')).toBe(true);
    expect(isIsoDate('2023-02-29')).toBe(false);
    expect(isIsoDate('2024-02-30')).toBe(false);
    expect(isIsoDate('2024-13-01')).toBe(false);
    expect(isIsoDate('2024-1-01')).toBe(false);
    expect(isIsoDate('2024-01-01T00:00')).toBe(false);
  });

  // Node reads TZ again when it is assigned: the arithmetic must not depend on the machine's zone.
  it.each(['UTC', 'America/Sao_Paulo', 'Europe/London', 'Pacific/Apia', 'Australia/Lord_Howe'])(
    'moves by calendar days across daylight-saving changes and missing midnights (TZ=%s)',
    (timeZone) => {
      process.env.TZ = timeZone;
      expect(shiftIsoDate('2018-11-03', 1)).toBe('2018-11-04'); // Sao Paulo: midnight did not exist
      expect(shiftIsoDate('2018-11-04', 1)).toBe('2018-11-05');
      expect(shiftIsoDate('2024-03-31', -1)).toBe('2024-03-30'); // London: clocks forward
      expect(shiftIsoDate('2011-12-29', 1)).toBe('2011-12-30'); // Apia skipped 2011-12-30 locally; report dates do not
      expect(shiftIsoDate('2024-02-28', 366)).toBe('2025-02-28');
      expect(countIsoDates('2024-03-01', '2024-03-31')).toBe(31);
      expect(countIsoDates('2018-10-01', '2018-11-30')).toBe(61);
      expect(countIsoDates('2024-03-02', '2024-03-01')).toBe(0);
      expect([...eachIsoDate('2024-10-26', '2024-10-29')]).toEqual(['2024-10-26', '2024-10-27', '2024-10-28', '2024-10-29']);
      expect(weekdayOf('2024-03-31')).toBe(0);
      expect(weekdayOf('2018-11-04')).toBe(0);
      expect(isoWeekEnd('2024-03-25')).toBe('2024-03-31');
      expect(isoWeekEnd('2024-03-31')).toBe('2024-03-31');
      expect(monthEnd('2024-02-10')).toBe('2024-02-29');
      expect(monthEnd('2018-11-04')).toBe('2018-11-30');
    },
  );

  it("says today's date in a time zone", () => {
    const instant = new Date('2024-06-30T23:30:00Z');
    expect(todayIn('UTC', instant)).toBe('2024-06-30');
    expect(todayIn('Asia/Tokyo', instant)).toBe('2024-07-01');
    expect(todayIn('America/Los_Angeles', instant)).toBe('2024-06-30');
  });
});
