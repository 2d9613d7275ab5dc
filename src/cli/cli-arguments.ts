import { InvalidArgumentError } from 'commander';
import { isIsoDate } from '../report-date.js';
import { REPORT_TYPES, isReportType, type ReportType } from '../reports/report-types.js';

/** `--from`/`--to`: a real calendar date, YYYY-MM-DD. */
export function parseDateArgument(value: string): string {
  if (!isIsoDate(value)) throw new InvalidArgumentError('expected a date in YYYY-MM-DD form, e.g. 2024-03-01');
  return value;
}

/**
 * The items of a comma-separated list, trimmed. An empty item (`1001,,1002`, a trailing comma) is
 * refused rather than skipped: it is more often a value lost to a shell variable than a typo.
 */
function listItems(value: string, what: string): string[] {
  const items = value.split(',').map((part) => part.trim());
  if (items.some((item) => item === '')) throw new InvalidArgumentError(`${what} has an empty item; separate values with single commas`);
  return items;
}

/** `--portfolios 1,2,3`: positive integer ids, comma-separated. */
export function parsePortfoliosArgument(value: string): number[] {
  const ids = listItems(value, 'the portfolio list');
  return ids.map((id) => {
    if (!/^\d{1,10}$/.test(id) || Number(id) < 1 || Number(id) > 2_147_483_647) {
      throw new InvalidArgumentError(`${quote(id)} is not a portfolio id (a whole number from 1 to 2147483647)`);
    }
    return Number(id);
  });
}

/** `--report-types index,constituent.close`: values the export endpoint accepts. */
export function parseReportTypesArgument(value: string): ReportType[] {
  const types = listItems(value, 'the report type list');
  for (const type of types) {
    if (!isReportType(type)) {
      throw new InvalidArgumentError(`${quote(type)} is not a report type; use one of ${REPORT_TYPES.join(', ')}`);
    }
  }
  return [...new Set(types)] as ReportType[];
}

/** A value from the command line as it may be shown: JSON-quoted (control characters escaped), cut short. */
function quote(value: string): string {
  const text = JSON.stringify(value);
  return text.length > 62 ? `${text.slice(0, 61)}…` : text;
}

/** `--concurrency N` and other counts: a positive integer. */
export function parsePositiveIntArgument(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a positive whole number');
  return Number(value);
}

/** `--port N`: 0 (any free port) to 65535. */
export function parsePortArgument(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65_535) throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return Number(value);
}

/** `--grace H`: hours, 0 or more, fractions allowed. */
export function parseHoursArgument(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) > 168) throw new InvalidArgumentError('expected a number of hours from 0 to 168, e.g. 6 or 1.5');
  return Number(value);
}

/**
 * `--code EXPORT_FORBIDDEN,FILE_INVALID`: error codes as the ledger stores them, comma-separated;
 * case does not matter (`file_invalid` is `FILE_INVALID`).
 */
export function parseErrorCodesArgument(value: string): string[] {
  const codes = listItems(value, 'the error code list').map((code) => code.toUpperCase());
  for (const code of codes) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(code)) throw new InvalidArgumentError(`${quote(code)} is not an error code; codes look like EXPORT_FORBIDDEN or FILE_INVALID (see report-sync status --failed)`);
  }
  return [...new Set(codes)];
}

/** `--request-seconds S`: a duration in seconds above 0, fractions allowed. */
export function parseSecondsArgument(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0 || Number(value) > 86_400) {
    throw new InvalidArgumentError('expected a number of seconds above 0 and at most 86400, e.g. 2 or 0.5');
  }
  return Number(value);
}
