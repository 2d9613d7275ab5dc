import { describe, expect, it } from 'vitest';
import { settingsSchema } from '../../../src/config/settings-schema.js';
import { UsageError } from '../../../src/errors/sync-error.js';
import { resolveRange } from '../../../src/cli/resolve-range.js';
import { shiftIsoDate, todayIn } from '../../../src/dates/report-date.js';

const settings = settingsSchema.parse({});
const tomorrow = shiftIsoDate(todayIn('UTC'), 1);

describe('resolveRange: the plausible window', () => {
  it('takes dates from dates.earliest to tomorrow, both included', () => {
    expect(resolveRange({ from: '2000-01-01', to: '2000-01-31' }, settings)).toMatchObject({ from: '2000-01-01', to: '2000-01-31' });
    expect(resolveRange({ from: '2024-01-08', to: tomorrow }, settings)).toMatchObject({ from: '2024-01-08', to: tomorrow });
  });

  it('refuses a year typed wrong, naming the setting that allows older dates', () => {
    expect(() => resolveRange({ from: '0224-01-08' }, settings)).toThrowError(
      new UsageError('--from 0224-01-08 is before dates.earliest (2000-01-01): check the year, or lower dates.earliest (REPORT_SYNC_DATES__EARLIEST) to reach older reports'),
    );
    expect(() => resolveRange({ from: '1999-12-31', to: '2000-01-05' }, settings)).toThrowError('--from 1999-12-31 is before dates.earliest');
  });

  it('refuses a date after tomorrow', () => {
    const later = shiftIsoDate(tomorrow, 1);
    expect(() => resolveRange({ from: '2024-01-01', to: later }, settings)).toThrowError(
      `--to ${later} is after tomorrow (${tomorrow} in UTC): no report exists for it yet; check the year`,
    );
    expect(() => resolveRange({ from: '2204-01-08' }, settings)).toThrowError('--from 2204-01-08 is after tomorrow');
  });

  it('takes older dates when dates.earliest is lowered', () => {
    const older = settingsSchema.parse({ dates: { earliest: '1990-01-01' } });
    expect(resolveRange({ from: '1995-06-30', to: '1995-07-01' }, older)).toMatchObject({ from: '1995-06-30' });
    expect(() => settingsSchema.parse({ dates: { earliest: '1990-02-30' } })).toThrowError(/not a date/);
  });
});
