/**
 * Business days (Monday to Friday; no holiday calendar) after `earlier` up to and including
 * `later`, both YYYY-MM-DD: a Friday is 1 business day before the Monday after it. Negative when
 * `earlier` is after `later`. Counted in whole weeks, so a date years away costs no long loop.
 */
export function businessDaysBetween(earlier: string, later: string): number {
  const from = utcDay(earlier);
  const to = utcDay(later);
  if (from > to) return -businessDaysBetween(later, earlier);
  const weeks = Math.floor((to - from) / 7);
  let count = weeks * 5;
  for (let day = from + weeks * 7 + 1; day <= to; day += 1) {
    // 1970-01-01 (day 0) was a Thursday: (day mod 7) 2 is a Saturday, 3 a Sunday.
    const weekday = ((day % 7) + 7) % 7;
    if (weekday !== 2 && weekday !== 3) count += 1;
  }
  return count;
}

/** Days since 1970-01-01 of a YYYY-MM-DD date (a calendar day, no time zone). */
function utcDay(isoDate: string): number {
  return Math.round(Date.UTC(Number(isoDate.slice(0, 4)), Number(isoDate.slice(5, 7)) - 1, Number(isoDate.slice(8, 10))) / 86_400_000);
}
