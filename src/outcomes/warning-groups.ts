import type { Slice } from '../slice/slice.js';

/**
 * What a data-quality check set to `warn` found in a file it loaded anyway (the fields of a
 * `SliceCheckResult` a summary needs; declared here so that outcomes and metrics need not depend
 * on the checks themselves).
 */
export interface CheckWarning {
  /** The check's setting name under `checks` (weightsSum…). */
  readonly check: string;
  readonly measured: number;
  readonly threshold: number;
  readonly message: string;
}

/** Slices of one warning group shown by name; the rest are counted. */
export const WARNING_EXAMPLES_PER_GROUP = 3;

/** One slice loaded with a warning, as an example of its group. */
export interface WarningExample {
  readonly slice: Slice;
  readonly measured: number;
  /** What the check found, and which setting changes its limit. */
  readonly message: string;
}

/** The slices of one portfolio loaded with a warning of one data-quality check. */
export interface WarningGroup {
  readonly check: string;
  readonly portfolioId: number;
  readonly slices: number;
  /** The smallest and largest value measured over the group's slices. */
  readonly measured: { readonly min: number; readonly max: number };
  /** The limit the values were held to (the largest, should the setting have changed). */
  readonly threshold: number;
  /** The first few, oldest first. */
  readonly examples: readonly WarningExample[];
}

/**
 * The slices loaded with warnings, grouped by check, then portfolio, with true counts and the
 * values measured: a month of one portfolio's weights that do not sum to 1 is one line, whatever
 * its length, and says how far off they were.
 */
export interface WarningSummary {
  /** Slices loaded with at least one warning (a slice two checks warned of is in two groups, counted once here). */
  readonly slices: number;
  /** Checks with the most slices first; within a check, portfolios with the most slices first. */
  readonly groups: readonly WarningGroup[];
}

export const NO_WARNINGS: WarningSummary = { slices: 0, groups: [] };

/** Counts the warnings of loaded slices as they happen, keeping a few examples per group: memory stays bounded by checks × portfolios. */
export class WarningTally {
  readonly #groups = new Map<
    string,
    { check: string; portfolioId: number; slices: number; measured: { min: number; max: number }; threshold: number; examples: WarningExample[] }
  >();
  #slices = 0;

  /** A slice loaded anew whose file missed the checks `warnings` (results whose outcome is `warn`). */
  add(slice: Slice, warnings: readonly CheckWarning[]): void {
    if (warnings.length === 0) return;
    this.#slices += 1;
    for (const warning of warnings) {
      const key = `${warning.check}\u0000${slice.portfolioId}`;
      let group = this.#groups.get(key);
      if (!group) {
        group = {
          check: warning.check,
          portfolioId: slice.portfolioId,
          slices: 0,
          measured: { min: warning.measured, max: warning.measured },
          threshold: warning.threshold,
          examples: [],
        };
        this.#groups.set(key, group);
      }
      group.slices += 1;
      group.measured.min = Math.min(group.measured.min, warning.measured);
      group.measured.max = Math.max(group.measured.max, warning.measured);
      group.threshold = Math.max(group.threshold, warning.threshold);
      group.examples.push({ slice, measured: warning.measured, message: warning.message });
      // Keep the oldest few: sorted, then cut, so memory stays bounded.
      if (group.examples.length > WARNING_EXAMPLES_PER_GROUP) group.examples = group.examples.sort(byDate).slice(0, WARNING_EXAMPLES_PER_GROUP);
    }
  }

  summary(): WarningSummary {
    return summariseWarnings(
      [...this.#groups.values()].map((group) => ({ ...group, examples: [...group.examples].sort(byDate) })),
      this.#slices,
    );
  }
}

/** Warning groups in the order they are shown. */
export function summariseWarnings(groups: readonly WarningGroup[], slices: number): WarningSummary {
  const byCheck = new Map<string, number>();
  for (const group of groups) byCheck.set(group.check, (byCheck.get(group.check) ?? 0) + group.slices);
  const ordered = [...groups].sort(
    (a, b) => byCheck.get(b.check)! - byCheck.get(a.check)! || a.check.localeCompare(b.check) || b.slices - a.slices || a.portfolioId - b.portfolioId,
  );
  return { slices, groups: ordered };
}

/** A measured value as summaries show it: up to 4 significant digits, no exponent for everyday sizes. */
export function formatMeasured(value: number): string {
  return String(Number(value.toPrecision(4)));
}

/** `measured 0.04` or `measured 0.04 to 0.91`, and the limit. */
export function describeMeasured(group: Pick<WarningGroup, 'measured' | 'threshold'>): string {
  const { min, max } = group.measured;
  return `measured ${min === max ? formatMeasured(min) : `${formatMeasured(min)} to ${formatMeasured(max)}`} (limit ${formatMeasured(group.threshold)})`;
}

function byDate(a: WarningExample, b: WarningExample): number {
  return a.slice.reportDate.localeCompare(b.slice.reportDate) || a.slice.reportType.localeCompare(b.slice.reportType);
}
