const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written YYYY-MM-DD (`2024-02-30` is not one). */
export function isIsoDate(text: string): boolean {
  const match = ISO_DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const DAY_MS = 86_400_000;

/**
 * Report dates are calendar days with no time zone, so all arithmetic is on UTC midnights:
 * local-time helpers would gain or lose an hour across a daylight-saving change.
 */
function toUtcMs(isoDate: string): number {
  const [year, month, day] = isoDate.split('-').map(Number) as [number, number, number];
  return Date.UTC(year, month - 1, day);
}

/** `isoDate` moved by `days` calendar days. */
export function shiftIsoDate(isoDate: string, days: number): string {
  return new Date(toUtcMs(isoDate) + days * DAY_MS).toISOString().slice(0, 10);
}

/** Days from `from` to `to`, both included; 0 when `to` is before `from`. */
export function countIsoDates(from: string, to: string): number {
  return Math.max(0, Math.round((toUtcMs(to) - toUtcMs(from)) / DAY_MS) + 1);
}

/** Each date from `from` to `to`, both included, lazily. */
export function* eachIsoDate(from: string, to: string): Generator<string> {
  const days = countIsoDates(from, to);
  for (let offset = 0; offset < days; offset += 1) yield shiftIsoDate(from, offset);
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
  return new Date(toUtcMs(isoDate)).getUTCDay();
}
