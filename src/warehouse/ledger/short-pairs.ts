import { eachIsoDate } from '../../dates/report-date.js';
import type { ReportType } from '../../reports/report-types.js';
import type { SliceRange } from '../../slice/slice-range.js';
import { pairKey, type Slice } from '../../slice/slice.js';

/** A portfolio and report type of a range. */
export interface LedgerPair {
  readonly portfolioId: number;
  readonly reportType: ReportType;
}

/**
 * The pairs of a range the ledger is short of slices of some statuses, and the days they do have
 * (see `Ledger.shortPairs`). The days are kept as a byte per day of each pair with some, not as
 * keys: a month of them is read for every pair short of a day, and a set of keys that outlives
 * its queries lets the heap grow with every month read.
 */
export class ShortPairs {
  /** The range's pairs with fewer slices of those statuses than it has days, in the range's order. */
  readonly pairs: readonly LedgerPair[];
  /** The days the pairs have, by pair; none for a pair with none. */
  readonly #held = new Map<string, Uint8Array | undefined>();
  readonly #dayIndex = new Map<string, number>();

  /** `pairs`, each with no day held yet. */
  constructor(range: Pick<SliceRange, 'from' | 'to'>, pairs: readonly LedgerPair[]) {
    this.pairs = pairs;
    for (const pair of pairs) this.#held.set(pairKey(pair.portfolioId, pair.reportType), undefined);
    let index = 0;
    for (const date of eachIsoDate(range.from, range.to)) this.#dayIndex.set(date, index++);
  }

  /** Records that a short pair has the slice of this day; a slice of any other pair or day is ignored. */
  hold(portfolioId: number, reportType: string, reportDate: string): void {
    const key = pairKey(portfolioId, reportType);
    const day = this.#dayIndex.get(reportDate);
    if (day === undefined || !this.#held.has(key)) return;
    let days = this.#held.get(key);
    if (days === undefined) this.#held.set(key, (days = new Uint8Array(this.#dayIndex.size)));
    days[day] = 1;
  }

  /** Whether the slice is of a short pair, on a day it does not have. */
  lacks(slice: Slice): boolean {
    const key = pairKey(slice.portfolioId, slice.reportType);
    if (!this.#held.has(key)) return false;
    const days = this.#held.get(key);
    return days === undefined || days[this.#dayIndex.get(slice.reportDate) ?? -1] !== 1;
  }
}
