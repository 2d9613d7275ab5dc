/** The data-quality checks, by their setting's name under `checks`. */
export const SLICE_CHECK_NAMES = ['weightsSum', 'duplicateIsin', 'rowCountDrop', 'effectiveDate', 'positiveValues'] as const;

export type SliceCheckName = (typeof SLICE_CHECK_NAMES)[number];

/** What one check found in one file: recorded per slice in `slice_checks`. */
export interface SliceCheckResult {
  readonly check: SliceCheckName;
  /** What the check was set to do on a miss (its `severity` setting). */
  readonly severity: 'fail' | 'warn';
  /** `pass`, or the severity the miss had. */
  readonly outcome: 'pass' | 'warn' | 'fail';
  /** What was measured: the weights' sum, the duplicates, the share of rows lost, the business days, the values not above zero. */
  readonly measured: number;
  /** The limit it was held to. */
  readonly threshold: number;
  /** What was found and which setting changes the limit; for a pass, what was checked. */
  readonly message: string;
}
