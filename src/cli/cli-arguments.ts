import { InvalidArgumentError } from 'commander';
import { UsageError } from '../errors/sync-error.js';
import { parseSelection } from '../selection/parse-selection.js';

/** Turns the library's parser of a selection into a flag parser: its UsageError becomes commander's message. */
function flagParser<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (error) {
      if (error instanceof UsageError) throw new InvalidArgumentError(error.message);
      throw error;
    }
  };
}

/** `--from`/`--to`: a real calendar date, YYYY-MM-DD. */
export const parseDateArgument = flagParser(parseSelection.date);

/** `--portfolios 1,2,3`: positive integer ids, comma-separated. */
export const parsePortfoliosArgument = flagParser(parseSelection.portfolios);

/** `--report-types index,constituent.close`: values the export endpoint accepts. */
export const parseReportTypesArgument = flagParser(parseSelection.reportTypes);

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

/** `--code EXPORT_FORBIDDEN,FILE_INVALID`: error codes, comma-separated, in any case. */
export const parseErrorCodesArgument = flagParser(parseSelection.errorCodes);

/** `--request-seconds S`: a duration in seconds above 0, fractions allowed. */
export function parseSecondsArgument(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) <= 0 || Number(value) > 86_400) {
    throw new InvalidArgumentError('expected a number of seconds above 0 and at most 86400, e.g. 2 or 0.5');
  }
  return Number(value);
}
