import { CronExpressionParser } from 'cron-parser';
import { shiftIsoDate } from '../dates/report-date.js';

/**
 * When the night that syncs `reportDate` is due to start: the first firing of the nightly cron
 * pattern at or after the midnight that ends `reportDate` in the schedule's time zone.
 */
export function nightDueAt(reportDate: string, cron: string, timeZone: string): Date {
  const midnight = midnightIn(shiftIsoDate(reportDate, 1), timeZone);
  return CronExpressionParser.parse(cron, { tz: timeZone, currentDate: new Date(midnight.getTime() - 1) })
    .next()
    .toDate();
}

/** The instant a calendar day starts in an IANA time zone. */
export function midnightIn(date: string, timeZone: string): Date {
  // Midnights of the zone from a day and a half before, until the one that falls on `date`
  // (daylight-saving changes make a fixed offset wrong for some days).
  const daily = CronExpressionParser.parse('0 0 * * *', { tz: timeZone, currentDate: new Date(Date.parse(`${date}T00:00:00Z`) - 36 * 3_600_000) });
  const format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  for (let i = 0; i < 4; i += 1) {
    const candidate = daily.next().toDate();
    if (format.format(candidate) === date) return candidate;
  }
  throw new Error(`no midnight found for ${date} in ${timeZone}`);
}
