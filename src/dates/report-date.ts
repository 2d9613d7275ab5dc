import { utc } from '@date-fns/utc';
import { addDays } from 'date-fns/addDays';
import { differenceInCalendarDays } from 'date-fns/differenceInCalendarDays';
import { endOfISOWeek } from 'date-fns/endOfISOWeek';
import { endOfMonth } from 'date-fns/endOfMonth';
import { getDay } from 'date-fns/getDay';
import { parseISO } from 'date-fns/parseISO';

/**
 * Report dates are calendar days with no time zone, so date-fns works on them as UTC midnights
 * (`in: utc`): in the machine's own zone a daylight-saving change, or a day that zone skipped
 * (Pacific/Apia has no 2011-12-30), would gain or lose a day.
 */
function toDate(isoDate: string): Date {
  return parseISO(isoDate, { in: utc });
}

function toIsoDate(date: Date): string {
  // A UTC midnight's ISO form starts with its date; date-fns's format would load its locale for this.
  return date.toISOString().slice(0, 10);
}

/** `isoDate` moved by `days` calendar days. */
export function shiftIsoDate(isoDate: string, days: number): string {
  return toIsoDate(addDays(toDate(isoDate), days));
}

/** Days from `from` to `to`, both included; 0 when `to` is before `from`. */
export function countIsoDates(from: string, to: string): number {
  return Math.max(0, differenceInCalendarDays(toDate(to), toDate(from)) + 1);
}

/** Each date from `from` to `to`, both included, lazily. */
export function* eachIsoDate(from: string, to: string): Generator<string> {
  const days = countIsoDates(from, to);
  const first = toDate(from);
  for (let offset = 0; offset < days; offset += 1) yield toIsoDate(addDays(first, offset));
}

/** The last day of the ISO week (Monday to Sunday) that `isoDate` falls in. */
export function isoWeekEnd(isoDate: string): string {
  return toIsoDate(endOfISOWeek(toDate(isoDate)));
}

/** The last day of the month that `isoDate` falls in. */
export function monthEnd(isoDate: string): string {
  return toIsoDate(endOfMonth(toDate(isoDate)));
}

/** True for an IANA time zone this runtime knows, such as `Europe/London`. */
export function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** Today's date in an IANA time zone, as YYYY-MM-DD. */
export function todayIn(timeZone: string, now: Date = new Date()): string {
  // en-CA formats as YYYY-MM-DD.
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(now);
}

/** Day of the week of a report date, 0 = Sunday … 6 = Saturday. */
export function weekdayOf(isoDate: string): number {
  return getDay(toDate(isoDate));
}
