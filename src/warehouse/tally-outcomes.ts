import { reportDefinitionFor } from '../reports/report-definition-for.js';
import type { ReportType } from '../reports/report-types.js';
import type { OutcomesSince } from './ledger.js';

/** Slices by outcome, as a summary counts them, from the ledger's outcomes since a moment. */
export interface OutcomeTally {
  loaded: number;
  unchanged: number;
  noData: number;
  noDataAgain: number;
  failed: number;
  retries: number;
  finished: number;
  rowsWritten: { index_report: number; constituent_report: number };
}

/** Counts what the ledger says the slices checked since a moment came to (see {@link Ledger.outcomesSince}). */
export function tallyOutcomes(outcomes: readonly OutcomesSince[]): OutcomeTally {
  const counts: OutcomeTally = { loaded: 0, unchanged: 0, noData: 0, noDataAgain: 0, failed: 0, retries: 0, finished: 0, rowsWritten: { index_report: 0, constituent_report: 0 } };
  for (const outcome of outcomes) {
    counts.finished += outcome.slices;
    counts.retries += outcome.retries;
    if (outcome.status === 'loaded') {
      counts.loaded += outcome.slices;
      counts.unchanged += outcome.unchanged;
      counts.rowsWritten[reportDefinitionFor(outcome.reportType as ReportType).table] += outcome.rowsWritten;
    } else if (outcome.status === 'no_data') {
      counts.noData += outcome.slices;
      counts.noDataAgain += outcome.unchanged;
    } else counts.failed += outcome.slices;
  }
  return counts;
}
