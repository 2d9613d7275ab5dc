import { SyncError, toSyncError } from '../errors/sync-error.js';
import { QualityCheckError } from '../quality/quality-check-error.js';
import { sliceLogFields } from '../slice/slice.js';
import type { SliceAttemptRun } from './slice-attempt-run.js';

/**
 * Writes a final failure to the ledger. If even that fails (the warehouse is down or locked), the
 * ledger cannot say so: the error returned (console summary, worker log) then says that the
 * failure is not in the ledger and why, so the operator knows to re-run the slice.
 */
export async function recordFinalFailure(run: Pick<SliceAttemptRun, 'slice' | 'attempt' | 'deps'>, error: SyncError, durationMs: number): Promise<SyncError> {
  const { slice, deps } = run;
  try {
    // A file refused by a data-quality check leaves its results beside the failure.
    const checks = error instanceof QualityCheckError ? error.results : undefined;
    await deps.loader.recordFailure(slice, `${error.code}: ${error.message}`, { attempts: run.attempt.number, durationMs, checks });
    return error;
  } catch (ledgerError) {
    const warehouseError = toSyncError(ledgerError);
    deps.logger.error({ ...sliceLogFields(slice), code: warehouseError.code, err: warehouseError }, 'could not record the failure in the ledger');
    return new SyncError(
      error.code,
      `${error.message}; this failure is NOT in the ledger (${warehouseError.message}), so status shows the slice as it was before: re-run it once the warehouse is available`,
      { cause: error, retryAfterMs: error.retryAfterMs },
    );
  }
}
