import { SyncError } from '../errors/sync-error.js';
import { REPORT_REGISTRY } from '../reports/report-registry.js';
import type { ExportFormat } from '../reports/report-types.js';
import { describeSlice } from '../slice/slice.js';
import type { SliceAttemptRun } from './slice-attempt-run.js';

/**
 * Records an empty answer as `no_data`; true when the ledger already said `no_data`. Never deletes
 * loaded rows (an upstream glitch would wipe data): that is `EMPTY_RESTATEMENT`, unless
 * `warehouse.acceptEmptyRestatements` says to believe such restatements.
 */
export async function recordEmptyAnswer(run: Pick<SliceAttemptRun, 'slice' | 'attempt' | 'deps' | 'elapsed'>, format: ExportFormat): Promise<boolean> {
  const { slice, deps } = run;
  const record = await deps.loader.recordEmptyAnswer({
    slice,
    definition: REPORT_REGISTRY[slice.reportType],
    format,
    attempts: run.attempt.number,
    acceptRestatement: deps.settings.warehouse.acceptEmptyRestatements,
    durationMs: run.elapsed(),
  });
  if (record.kind === 'refused') {
    const previous = record.previous;
    throw new SyncError(
      'EMPTY_RESTATEMENT',
      `the service answered 200 with no data for ${describeSlice(slice)}, which the warehouse holds ${previous.row_count} rows of ` +
        `(${previous.file_name ?? 'loaded'} at ${previous.updated_at}); the rows are kept. If the service really withdrew them, ` +
        'set warehouse.acceptEmptyRestatements to true and run the slice again',
    );
  }
  return record.kind === 'unchanged';
}
