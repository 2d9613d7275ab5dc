const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * True for a real calendar date written YYYY-MM-DD (`2024-02-30` is not one). Checked by hand, not
 * with date-fns: every date cell of every row passes here, and parseISO + isValid is much slower.
 */
export function isIsoDate(text: string): boolean {
  const match = ISO_DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
