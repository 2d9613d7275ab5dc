import { planSlices, rangeMonths, rangeOfPairs, type SliceRange } from '../slice/slice-range.js';
import type { Slice } from '../slice/slice.js';
import type { SliceStatus } from '../warehouse/engine/warehouse-schema.js';
import type { Ledger } from '../warehouse/ledger/ledger.js';

/** What planning the missing slices counts as done. */
export interface PlanMissingOptions {
  /**
   * The statuses of a slice the ledger has that are not missing: by default a failed slice is
   * missing (`backfill --only-missing`); with all three, only a slice never attempted is (`check`).
   * @defaultValue `['loaded', 'no_data']`
   */
  readonly done?: readonly SliceStatus[];
}

const LOADED_OR_NO_DATA: readonly SliceStatus[] = ['loaded', 'no_data'];

/**
 * The slices of a range that the ledger does not have as `loaded` or `no_data` (never attempted,
 * or failed), in {@link planSlices} order, produced lazily a month at a time. Of each month only
 * the pairs the ledger's counts show short are planned, and only the days of those with some are
 * read (see `Ledger.shortPairs`): months of done slices cost a count, not their rows.
 */
export async function* planMissingSlices(range: SliceRange, ledger: Ledger, options: PlanMissingOptions = {}): AsyncGenerator<Slice> {
  const done = options.done ?? LOADED_OR_NO_DATA;
  // Calendar months, not fixed windows: a whole month is counted by the monthly counts alone.
  for (const month of rangeMonths(range)) {
    const short = await ledger.shortPairs(month, { status: done });
    if (short.pairs.length === 0) continue;
    for (const slice of planSlices(rangeOfPairs(month, short.pairs))) if (short.lacks(slice)) yield slice;
  }
}
