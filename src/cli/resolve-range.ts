import type { Settings } from '../config/settings-schema.js';
import { UsageError } from '../errors.js';
import type { SliceRange } from '../plan-slices.js';
import { shiftIsoDate, todayIn } from '../report-date.js';
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
  checkPlausible(from, '--from', settings);
  checkPlausible(to, '--to', settings);
  return {
    from,
    to,
    portfolios: options.portfolios ?? settings.portfolios,
    reportTypes: options.reportTypes ?? settings.reportTypes,
  };
}

/**
 * Refuses a date outside the window a report can have: before `dates.earliest` (a year typed
 * wrong, `0224-01-08`), or after tomorrow in the schedule's time zone (no report exists yet).
 */
export function checkPlausible(date: string, flag: string, settings: Pick<Settings, 'dates' | 'schedule'>): void {
  const { earliest } = settings.dates;
  if (date < earliest) {
    throw new UsageError(`${flag} ${date} is before dates.earliest (${earliest}): check the year, or lower dates.earliest (REPORT_SYNC_DATES__EARLIEST) to reach older reports`);
  }
  const latest = shiftIsoDate(todayIn(settings.schedule.timeZone), 1);
  if (date > latest) throw new UsageError(`${flag} ${date} is after tomorrow (${latest} in ${settings.schedule.timeZone}): no report exists for it yet; check the year`);
}
