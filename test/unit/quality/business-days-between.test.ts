import { describe, expect, it } from 'vitest';
import { businessDaysBetween } from '../../../src/quality/business-days-between.js';

describe('businessDaysBetween (Monday to Friday, no holidays)', () => {
  it('counts the weekdays after the first date up to and including the second', () => {
    expect(businessDaysBetween('2024-05-06', '2024-05-06')).toBe(0); // a Monday, itself
    expect(businessDaysBetween('2024-05-03', '2024-05-06')).toBe(1); // Friday → Monday
    expect(businessDaysBetween('2024-05-04', '2024-05-06')).toBe(1); // Saturday → Monday
    expect(businessDaysBetween('2024-05-03', '2024-05-05')).toBe(0); // Friday → Sunday
    expect(businessDaysBetween('2024-04-22', '2024-05-06')).toBe(10); // two whole weeks
    expect(businessDaysBetween('2024-04-26', '2024-05-06')).toBe(6);
  });

  it('is negative when the first date is the later one, and counts years without a long loop', () => {
    expect(businessDaysBetween('2024-05-07', '2024-05-06')).toBe(-1);
    // 2014-01-01 (a Wednesday) to 2024-01-01 (a Monday): 3,652 days, 521 whole weeks to Wednesday
    // 2023-12-27, then Thursday, Friday, the weekend and Monday.
    expect(businessDaysBetween('2014-01-01', '2024-01-01')).toBe(521 * 5 + 3);
  });

  it('crosses a leap day and a year end as calendar days', () => {
    expect(businessDaysBetween('2024-02-28', '2024-03-01')).toBe(2);
    expect(businessDaysBetween('2023-12-29', '2024-01-02')).toBe(2);
  });
});
