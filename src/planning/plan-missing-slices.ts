import { planSlices, rangeWindows, type SliceRange } from '../slice/slice-range.js';
import { sliceKey, type Slice } from '../slice/slice.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';

/**
 * The slices of a range that the ledger does not have as `loaded` or `no_data` (never attempted,
 * or failed), produced lazily a month at a time.
 */
export async function* planMissingSlices(range: SliceRange, ledger: Ledger): AsyncGenerator<Slice> {
  for (const window of rangeWindows(range)) {
    const done = await ledger.sliceKeys(window, { status: ['loaded', 'no_data'] });
    for (const slice of planSlices(window)) if (!done.has(sliceKey(slice))) yield slice;
  }
}
