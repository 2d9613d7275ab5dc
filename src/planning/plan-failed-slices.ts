import { planSlices, rangeWindows, type SliceRange } from '../slice/slice-range.js';
import { sliceKey, type Slice } from '../slice/slice.js';
import { sliceOfEntry, type Ledger } from '../warehouse/ledger/ledger.js';

/**
 * The slices of a range whose last outcome in the ledger is `failed` (only those with one of
 * `codes`, when given), in {@link planSlices} order, produced lazily a month at a time: a
 * ten-year range of failures is never held whole.
 */
export async function* planFailedSlices(range: SliceRange, ledger: Ledger, codes?: readonly string[]): AsyncGenerator<Slice> {
  for (const window of rangeWindows(range)) {
    const failed = new Set((await ledger.entries({ ...window, errorCodes: codes }, { status: 'failed' })).map((entry) => sliceKey(sliceOfEntry(entry))));
    if (failed.size === 0) continue;
    for (const slice of planSlices(window)) if (failed.has(sliceKey(slice))) yield slice;
  }
}
