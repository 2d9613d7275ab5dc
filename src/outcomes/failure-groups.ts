import type { ReportType } from '../reports/report-types.js';
import type { Slice } from '../slice/slice.js';

/** Slices of one failure group shown by name; the rest are counted. */
export const EXAMPLES_PER_GROUP = 3;

/** One failed slice, as an example of its group. */
export interface FailureExample {
  readonly slice: Slice;
  /** What the error says after its code. */
  readonly message: string;
}

/** The failures of one error code for one portfolio. */
export interface FailureGroup {
  readonly code: string;
  readonly portfolioId: number;
  readonly slices: number;
  /** The first few, oldest first. */
  readonly examples: readonly FailureExample[];
}

/** The smallest range holding every failed slice: what a retry command has to cover. */
export interface FailureSpan {
  readonly from: string;
  readonly to: string;
  readonly portfolios: readonly number[];
  readonly reportTypes: readonly ReportType[];
}

/**
 * Failures grouped by error code, then portfolio, with true counts however many there were: one
 * forbidden portfolio's 700 slices are one line, and cannot hide the one corrupt file beside them.
 */
export interface FailureSummary {
  readonly total: number;
  /** Codes with the most slices first; within a code, portfolios with the most slices first. */
  readonly groups: readonly FailureGroup[];
  readonly span: FailureSpan | undefined;
}

export const NO_FAILURES: FailureSummary = { total: 0, groups: [], span: undefined };

/** Counts failures as they happen, keeping a few examples per group: memory stays bounded by codes × portfolios. */
export class FailureTally {
  readonly #groups = new Map<string, { code: string; portfolioId: number; slices: number; examples: FailureExample[] }>();
  #total = 0;
  #from: string | undefined;
  #to: string | undefined;
  readonly #portfolios = new Set<number>();
  readonly #reportTypes = new Set<ReportType>();

  add(slice: Slice, code: string, message: string): void {
    this.#total += 1;
    const key = `${code}\u0000${slice.portfolioId}`;
    let group = this.#groups.get(key);
    if (!group) {
      group = { code, portfolioId: slice.portfolioId, slices: 0, examples: [] };
      this.#groups.set(key, group);
    }
    group.slices += 1;
    if (group.examples.length < EXAMPLES_PER_GROUP) group.examples.push({ slice, message });
    if (this.#from === undefined || slice.reportDate < this.#from) this.#from = slice.reportDate;
    if (this.#to === undefined || slice.reportDate > this.#to) this.#to = slice.reportDate;
    this.#portfolios.add(slice.portfolioId);
    this.#reportTypes.add(slice.reportType);
  }

  get total(): number {
    return this.#total;
  }

  summary(): FailureSummary {
    return summariseFailures(
      [...this.#groups.values()].map((group) => ({ ...group, examples: [...group.examples].sort(byDate) })),
      this.#from === undefined
        ? undefined
        : { from: this.#from, to: this.#to!, portfolios: [...this.#portfolios].sort((a, b) => a - b), reportTypes: [...this.#reportTypes].sort() },
    );
  }
}

/** Failure groups in the order they are shown, with their total. */
export function summariseFailures(groups: readonly FailureGroup[], span: FailureSpan | undefined): FailureSummary {
  const byCode = new Map<string, number>();
  for (const group of groups) byCode.set(group.code, (byCode.get(group.code) ?? 0) + group.slices);
  const ordered = [...groups].sort((a, b) => byCode.get(b.code)! - byCode.get(a.code)! || a.code.localeCompare(b.code) || b.slices - a.slices || a.portfolioId - b.portfolioId);
  return { total: groups.reduce((sum, group) => sum + group.slices, 0), groups: ordered, span };
}

function byDate(a: FailureExample, b: FailureExample): number {
  return a.slice.reportDate.localeCompare(b.slice.reportDate) || a.slice.reportType.localeCompare(b.slice.reportType);
}
