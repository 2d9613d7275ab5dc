import { monthEnd, shiftIsoDate } from '../../dates/report-date.js';

/** A range of report dates (inclusive), as YYYY-MM-DD text. */
export interface DateSpan {
  readonly from: string;
  readonly to: string;
}

/**
 * A range of report dates in three parts: the whole months inside it (`months`: the first days of
 * the first and last of them), which the monthly counts answer, and the days before and after
 * them (`edges`: none, one or two spans), which only the ledger can. A range inside one month
 * that is not the whole month is all edge.
 */
export interface SplitRange {
  readonly months?: DateSpan;
  readonly edges: readonly DateSpan[];
}

/** Splits `range` into its whole months and the days at its edges (see {@link SplitRange}). */
export function splitWholeMonths(range: DateSpan): SplitRange {
  const { from, to } = range;
  if (from > to) return { edges: [] };
  const firstWhole = from.endsWith('-01') ? from : shiftIsoDate(monthEnd(from), 1);
  const lastWholeEnd = monthEnd(to) === to ? to : shiftIsoDate(`${to.slice(0, 7)}-01`, -1);
  if (firstWhole > lastWholeEnd) return { edges: [range] };
  const edges: DateSpan[] = [];
  if (from < firstWhole) edges.push({ from, to: shiftIsoDate(firstWhole, -1) });
  if (lastWholeEnd < to) edges.push({ from: shiftIsoDate(lastWholeEnd, 1), to });
  return { months: { from: firstWhole, to: `${lastWholeEnd.slice(0, 7)}-01` }, edges };
}
