import { InvalidArgumentError } from 'commander';
import { isIsoDate } from '../report-date.js';
import { REPORT_TYPES, isReportType, type ReportType } from '../reports/report-types.js';

/** `--from`/`--to`: a real calendar date, YYYY-MM-DD. */
export function parseDateArgument(value: string): string {
  if (!isIsoDate(value)) throw new InvalidArgumentError('expected a date in YYYY-MM-DD form, e.g. 2024-03-01');
  return value;
}

/** `--portfolios 1,2,3`: positive integer ids, comma-separated. */
export function parsePortfoliosArgument(value: string): number[] {
  const ids = value.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (ids.length === 0) throw new InvalidArgumentError('expected portfolio ids separated by commas, e.g. 1001,1002');
  return ids.map((id) => {
    if (!/^\d{1,10}$/.test(id) || Number(id) < 1 || Number(id) > 2_147_483_647) {
      throw new InvalidArgumentError(`"${id}" is not a portfolio id (a positive integer)`);
    }
    return Number(id);
  });
}

/** `--report-types index,constituent.close`: values the export endpoint accepts. */
export function parseReportTypesArgument(value: string): ReportType[] {
  const types = value.split(',').map((part) => part.trim()).filter((part) => part !== '');
  if (types.length === 0) throw new InvalidArgumentError(`expected report types separated by commas: ${REPORT_TYPES.join(', ')}`);
  for (const type of types) {
    if (!isReportType(type)) {
      throw new InvalidArgumentError(`"${type.slice(0, 60)}" is not a report type; use one of ${REPORT_TYPES.join(', ')}`);
    }
  }
  return [...new Set(types)] as ReportType[];
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
