import type { SyncError } from '../errors.js';
import type { ReportTableName } from '../reports/report-definition.js';
import type { Slice } from '../slice.js';

/** What a run came to, for the summary and the exit code. */
export interface RunReport {
  readonly planned: number;
  readonly loaded: number;
  /** Of `loaded`: the file was the one already in the warehouse. */
  readonly unchanged: number;
  readonly noData: number;
  readonly failed: number;
  /** Planned slices never started because the run stopped early. */
  readonly notAttempted: number;
  readonly retries: number;
  /** Rows written by this run, per table. */
  readonly rowsWritten: Readonly<Record<ReportTableName, number>>;
  readonly bytes: number;
  /** The first failures, with their reasons (at most a few hundred are kept). */
  readonly failures: readonly { readonly slice: Slice; readonly error: SyncError }[];
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
