import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/errors/sync-error.js';
import { parseSelection } from '../../../src/selection/parse-selection.js';

describe('parseSelection.date', () => {
  it('takes real calendar days, leap days included', () => {
    for (const day of ['2024-02-29', '2024-12-31', '2023-01-01', '2000-02-29']) expect(parseSelection.date(day)).toBe(day);
  });

  it('says a day does not exist, naming how many days its month has', () => {
    expect(() => parseSelection.date('2024-02-30')).toThrowError(new UsageError('2024-02-30 is not a day of the calendar: February 2024 has 29 days'));
    expect(() => parseSelection.date('2023-02-29')).toThrowError('February 2023 has 28 days');
    expect(() => parseSelection.date('2024-04-31')).toThrowError('April 2024 has 30 days');
    expect(() => parseSelection.date('2024-01-00')).toThrowError('January 2024 has 31 days');
    expect(() => parseSelection.date('2024-13-01')).toThrowError('2024-13-01 has no month 13: months run from 01 to 12');
  });

  it('says a value that is no date at all is not one, with the form expected', () => {
    for (const value of ['2024-1-1', '20240101', '2024-01-01T00:00', 'yesterday']) {
      expect(() => parseSelection.date(value)).toThrowError(`${JSON.stringify(value)} is not a date; expected YYYY-MM-DD, e.g. 2024-03-01`);
    }
  });
});
