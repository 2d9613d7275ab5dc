import { UsageError } from '../errors/sync-error.js';
import { shiftIsoDate, todayIn } from './report-date.js';

/** The report dates a command or the dashboard takes: from `dates.earliest` to tomorrow in the schedule's time zone. */
export interface DateWindow {
  /** `dates.earliest`. */
  readonly earliest: string;
  /** `schedule.timeZone`, which decides what tomorrow is. */
  readonly timeZone: string;
}

/**
 * Refuses a date before `dates.earliest` (a mistyped year) or after tomorrow in the schedule's time
 * zone: one rule for every command's and the dashboard's dates, so a range of centuries is stopped
 * where it is typed.
 * @param name what the date was given as (`--from`, `from`), repeated in the message
 * @throws UsageError naming the setting and what to fix
 */
export function checkPlausibleDate(date: string, name: string, window: DateWindow): void {
  const { earliest, timeZone } = window;
  if (date < earliest) {
    throw new UsageError(`${name} ${date} is before dates.earliest (${earliest}): check the year, or lower dates.earliest (REPORT_SYNC_DATES__EARLIEST) to reach older reports`);
  }
  const latest = shiftIsoDate(todayIn(timeZone), 1);
  if (date > latest) throw new UsageError(`${name} ${date} is after tomorrow (${latest} in ${timeZone}): no report exists for it yet; check the year`);
}
