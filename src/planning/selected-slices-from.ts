import { countIsoDates, shiftIsoDate } from '../dates/report-date.js';
import type { SliceSelection } from '../selection/slice-selection.js';
import { countSlices, type SliceRange } from '../slice/slice-range.js';
import type { Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';
import { planSelectedSlices } from './plan-selected-slices.js';

/** A slice with its position in the range's order ({@link planSlices}: date, then portfolio, then report type). */
export interface PlacedSlice {
  readonly slice: Slice;
  /** 0 for the range's first slice, `countSlices(range) - 1` for its last. */
  readonly position: number;
}

/**
 * The slices a selection takes from a range, starting at a position of the range's order: a plan
 * that queues a range a window at a time goes on from where it stopped. Lazy, like the selection.
 */
export async function* selectedSlicesFrom(range: SliceRange, selection: SliceSelection, ledger: Ledger, start: number): AsyncGenerator<PlacedSlice> {
  const perDay = range.portfolios.length * range.reportTypes.length;
  if (perDay === 0 || start >= countSlices(range)) return;
  const firstDay = Math.floor(start / perDay);
  const rest: SliceRange = { ...range, from: shiftIsoDate(range.from, firstDay) };
  const portfolioIndex = new Map(range.portfolios.map((id, i) => [id, i]));
  const typeIndex = new Map<string, number>(range.reportTypes.map((type, i) => [type, i]));
  // Slices come date by date: the day's index is worked out once per date, not once per slice.
  let day = { date: '', index: 0 };
  const positionOf = (slice: Slice) => {
    if (slice.reportDate !== day.date) day = { date: slice.reportDate, index: countIsoDates(range.from, slice.reportDate) - 1 };
    return day.index * perDay + portfolioIndex.get(slice.portfolioId)! * range.reportTypes.length + typeIndex.get(slice.reportType)!;
  };
  for await (const slice of planSelectedSlices(rest, selection, ledger)) {
    const position = positionOf(slice);
    if (position >= start) yield { slice, position };
  }
}
