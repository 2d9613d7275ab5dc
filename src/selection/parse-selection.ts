import { UsageError } from '../errors/sync-error.js';
import { isIsoDate } from '../dates/is-iso-date.js';
import { REPORT_TYPES, isReportType, type ReportType } from '../reports/report-types.js';

/**
 * The syntax of what a user selects slices by (a date, portfolio ids, report types, error codes),
 * one rule for every place that takes them: the command line's flags and the dashboard's URL.
 * Each parser returns the value or throws a `UsageError` saying what a good value looks like.
 */
export const parseSelection = {
  /** A real calendar date, YYYY-MM-DD. */
  date(value: string): string {
    if (isIsoDate(value)) return value;
    const parts = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
    if (!parts) throw new UsageError(`${quote(value)} is not a date; expected YYYY-MM-DD, e.g. 2024-03-01`);
    const [year, month] = [Number(parts[1]), Number(parts[2])];
    if (month < 1 || month > 12) throw new UsageError(`${value} has no month ${parts[2]}: months run from 01 to 12`);
    // Day 0 of the next month is the last day of this one.
    const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
    const monthName = new Date(Date.UTC(year, month - 1, 1)).toLocaleString('en-US', { month: 'long', timeZone: 'UTC' });
    throw new UsageError(`${value} is not a day of the calendar: ${monthName} ${parts[1]} has ${days} days`);
  },

  /** `1,2,3`: positive integer ids, comma-separated. */
  portfolios(value: string): number[] {
    return listItems(value, 'the portfolio list').map((id) => {
      if (!/^\d{1,10}$/.test(id) || Number(id) < 1 || Number(id) > 2_147_483_647) {
        throw new UsageError(`${quote(id)} is not a portfolio id (a whole number from 1 to 2147483647)`);
      }
      return Number(id);
    });
  },

  /** `index,constituent.close`: values the export endpoint accepts, each once. */
  reportTypes(value: string): ReportType[] {
    const types = listItems(value, 'the report type list');
    for (const type of types) {
      if (!isReportType(type)) throw new UsageError(`${quote(type)} is not a report type; use one of ${REPORT_TYPES.join(', ')}`);
    }
    return [...new Set(types)] as ReportType[];
  },

  /** `EXPORT_FORBIDDEN,file_invalid`: error codes as the ledger stores them; case does not matter. */
  errorCodes(value: string): string[] {
    const codes = listItems(value, 'the error code list').map((code) => code.toUpperCase());
    for (const code of codes) {
      if (!/^[A-Z][A-Z0-9_]*$/.test(code)) {
        throw new UsageError(`${quote(code)} is not an error code; codes look like EXPORT_FORBIDDEN or FILE_INVALID (see report-sync status --failed)`);
      }
    }
    return [...new Set(codes)];
  },
} as const;

/**
 * The items of a comma-separated list, trimmed. An empty item (`1001,,1002`, a trailing comma) is
 * refused rather than skipped: it is more often a value lost to a shell variable than a typo.
 */
function listItems(value: string, what: string): string[] {
  const items = value.split(',').map((part) => part.trim());
  if (items.some((item) => item === '')) throw new UsageError(`${what} has an empty item; separate values with single commas`);
  return items;
}

/** A value as it may be shown: JSON-quoted (control characters escaped), cut short. */
function quote(value: string): string {
  const text = JSON.stringify(value);
  return text.length > 62 ? `${text.slice(0, 61)}…` : text;
}
