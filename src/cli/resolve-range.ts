import type { Settings } from '../config/settings-schema.js';
import { UsageError } from '../errors/sync-error.js';
import { checkPlausibleDate } from '../dates/plausible-date.js';
import type { SliceRange } from '../slice/slice-range.js';
import { shiftIsoDate, todayIn } from '../dates/report-date.js';
import type { ReportType } from '../reports/report-types.js';

/** The range flags `run`, `backfill` and `status` share. */
export interface RangeOptions {
  readonly from?: string;
  readonly to?: string;
  readonly portfolios?: number[];
  readonly reportTypes?: ReportType[];
}

/**
 * The range a command works on: `--to` defaults to yesterday in the configured time zone (or to
 * `--from` when that is later), `--from` to `defaultFrom(to)`; portfolios and report types default
 * to the configured ones. `--from` after `--to` is a usage error.
 */
export function resolveRange(options: RangeOptions, settings: Settings, defaultFrom: (to: string) => string = (to) => to): SliceRange {
  const yesterday = shiftIsoDate(todayIn(settings.schedule.timeZone), -1);
  const to = options.to ?? (options.from && options.from > yesterday ? options.from : yesterday);
  const from = options.from ?? defaultFrom(to);
  if (from > to) throw new UsageError(`--from ${from} is after --to ${to}`);
  const window = { earliest: settings.dates.earliest, timeZone: settings.schedule.timeZone };
  checkPlausibleDate(from, '--from', window);
  checkPlausibleDate(to, '--to', window);
  return {
    from,
    to,
    portfolios: options.portfolios ?? settings.portfolios,
    reportTypes: options.reportTypes ?? settings.reportTypes,
  };
}
