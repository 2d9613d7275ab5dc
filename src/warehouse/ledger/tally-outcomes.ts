import { REPORT_REGISTRY } from '../../reports/report-registry.js';
import { isReportType } from '../../reports/report-types.js';
import { rowsPerTable, type RowsPerTable } from '../../reports/rows-per-table.js';
import type { OutcomesSince } from './ledger.js';

/** Slices by outcome, as a summary counts them, from the ledger's outcomes since a moment. */
export interface OutcomeTally {
  loaded: number;
  unchanged: number;
  noData: number;
  noDataAgain: number;
  failed: number;
  retries: number;
  /** Of `loaded`: slices loaded anew whose file missed a data-quality check set to `warn`. */
  warned: number;
  finished: number;
  rowsWritten: RowsPerTable;
}

/** Counts what the ledger says the slices checked since a moment came to (see {@link Ledger.outcomesSince}). */
export function tallyOutcomes(outcomes: readonly OutcomesSince[]): OutcomeTally {
  const counts: OutcomeTally = { loaded: 0, unchanged: 0, noData: 0, noDataAgain: 0, failed: 0, retries: 0, warned: 0, finished: 0, rowsWritten: rowsPerTable() };
  for (const outcome of outcomes) {
    counts.finished += outcome.slices;
    counts.retries += outcome.retries;
    counts.warned += outcome.warned;
    if (outcome.status === 'loaded') {
      counts.loaded += outcome.slices;
      counts.unchanged += outcome.unchanged;
      // A report type this version does not know (a ledger row a newer one wrote) has no table here.
      if (isReportType(outcome.reportType)) counts.rowsWritten[REPORT_REGISTRY[outcome.reportType].table] += outcome.rowsWritten;
    } else if (outcome.status === 'no_data') {
      counts.noData += outcome.slices;
      counts.noDataAgain += outcome.unchanged;
    } else counts.failed += outcome.slices;
  }
  return counts;
}
