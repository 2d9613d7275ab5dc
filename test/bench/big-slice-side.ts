import { ownPeakRssBytes } from './own-peak-rss.js';

/** What one side of the big-slice benchmark reports from its own child process. */
export interface BigSliceSideResult {
  readonly rows: number;
  readonly ms: number;
  /** Peak resident set size of the side's process, in MiB. */
  readonly peakRssMb: number;
}

/** The side's result, with the process's own peak RSS so far. */
export function sideResult(rows: number, ms: number): BigSliceSideResult {
  return { rows, ms, peakRssMb: ownPeakRssBytes() / 2 ** 20 };
}
