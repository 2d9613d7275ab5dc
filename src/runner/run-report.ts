import type { SyncError } from '../errors/sync-error.js';
import type { FailureSummary } from '../outcomes/failure-groups.js';
import type { RowsPerTable } from '../reports/rows-per-table.js';
import type { WarningSummary } from '../outcomes/warning-groups.js';

/**
 * What a run came to, for the summary, the alert and the exit code; every count comes from what the
 * slices actually did (the runner's outcomes, or the ledger and the jobs for a queued backfill).
 */
export interface RunReport {
  readonly planned: number;
  readonly loaded: number;
  /** Of `loaded`: the file was the one already in the warehouse. */
  readonly unchanged: number;
  /** Of `loaded`: slices loaded anew whose file missed a data-quality check set to `warn` (loaded with warnings). */
  readonly warned: number;
  readonly noData: number;
  /** Of `noData`: the slice had no data already. */
  readonly noDataAgain: number;
  readonly failed: number;
  /** Planned slices that never got an outcome (the run stopped early, or their jobs were lost). */
  readonly notAttempted: number;
  /** Why `notAttempted` slices got none, when there is more to say than the run stopping early. */
  readonly notAttemptedReason?: string;
  /** Attempts after the first, of every slice. */
  readonly retries: number;
  /** Rows written by this run, per table: the rows of every slice loaded anew (warned ones included), none of an unchanged one. */
  readonly rowsWritten: Readonly<RowsPerTable>;
  readonly bytes: number;
  /** The failures, grouped by code and portfolio, with true counts. */
  readonly failures: FailureSummary;
  /** The warnings of the slices loaded with warnings, grouped by check and portfolio, with the values measured. */
  readonly warnings: WarningSummary;
  /** The command that re-runs what failed or was not attempted, when anything was. */
  readonly retryCommand?: string;
  /** Set when an error made going on pointless (refused credentials). */
  readonly stoppedBy: SyncError | undefined;
  readonly interrupted: boolean;
  readonly durationMs: number;
}

/** 0 when every slice ended loaded or no_data; 1 when any failed or was left out; 2 when stopped by configuration. */
export function exitCodeOf(report: RunReport): number {
  if (report.stoppedBy?.fatal) return 2;
  return report.failed > 0 || report.notAttempted > 0 ? 1 : 0;
}
