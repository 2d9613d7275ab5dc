import { planFailedSlices } from './plan-failed-slices.js';
import { planMissingSlices } from './plan-missing-slices.js';
import { countSlices, planSlices, type SliceRange } from '../slice/slice-range.js';
import type { SliceSelection } from '../selection/slice-selection.js';
import type { Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';

/** The slices of a range a selection takes, lazily (see {@link planMissingSlices} and {@link planFailedSlices}). */
export function planSelectedSlices(range: SliceRange, selection: SliceSelection, ledger: Ledger): Iterable<Slice> | AsyncIterable<Slice> {
  switch (selection.kind) {
    case 'all':
      return planSlices(range);
    case 'missing':
      return planMissingSlices(range, ledger);
    case 'failed':
      return planFailedSlices(range, ledger, selection.codes);
  }
}

/** How many slices {@link planSelectedSlices} yields, counted in SQL (a ten-year range stays cheap). */
export async function countSelectedSlices(range: SliceRange, selection: SliceSelection, ledger: Ledger): Promise<number> {
  if (selection.kind === 'all') return countSlices(range);
  if (selection.kind === 'failed') {
    const counts = await ledger.countByStatus({ ...range, errorCodes: selection.codes });
    return counts.filter((count) => count.status === 'failed').reduce((sum, count) => sum + count.slices, 0);
  }
  const done = (await ledger.countByStatus(range)).filter((count) => count.status !== 'failed').reduce((sum, count) => sum + count.slices, 0);
  return countSlices(range) - done;
}
