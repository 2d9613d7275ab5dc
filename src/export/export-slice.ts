import { toSyncError } from '../errors/sync-error.js';
import type { SliceAttempt, SliceOutcome } from '../outcomes/slice-outcome.js';
import { sliceLogFields, type Slice } from '../slice/slice.js';
import type { ExportSliceDeps } from './export-slice-deps.js';
import type { ExportSliceOptions } from './export-slice-options.js';
import { fetchAndLoad } from './fetch-and-load.js';
import { recordFinalFailure } from './record-final-failure.js';

/**
 * One attempt at one slice end to end (token, download, parse, load), the same for the in-process
 * runner and the queue worker. It never throws: it returns the attempt's outcome, logs it on the
 * slice's own logger, counts it in the metrics, and writes the ledger whenever that outcome is final.
 */
export async function exportSlice(slice: Slice, attempt: SliceAttempt, deps: ExportSliceDeps, options: ExportSliceOptions = {}): Promise<SliceOutcome> {
  const outcome = await attemptExport(slice, attempt, deps, options);
  if (outcome.final) deps.metrics?.sliceFinished(outcome);
  else if (outcome.status === 'failed' && outcome.error.code !== 'INTERRUPTED') deps.metrics?.sliceRetried(outcome.error.code);
  return outcome;
}

async function attemptExport(slice: Slice, attempt: SliceAttempt, deps: ExportSliceDeps, options: ExportSliceOptions): Promise<SliceOutcome> {
  const startedAt = performance.now();
  const log = deps.logger.child(Object.assign(sliceLogFields(slice), { attempt: attempt.number }));
  const elapsed = () => Math.round(performance.now() - startedAt);
  try {
    const outcome = await fetchAndLoad({ slice, attempt, deps, elapsed, log }, options);
    if (outcome.status === 'loaded') {
      log.info(
        {
          status: 'loaded',
          rows: outcome.rowCount,
          bytes: outcome.bytes,
          format: outcome.format,
          unchanged: outcome.unchanged,
          durationMs: outcome.durationMs,
          attempts: attempt.number,
        },
        'slice loaded',
      );
    } else {
      log.info({ status: 'no_data', rows: 0, bytes: 0, durationMs: outcome.durationMs, attempts: attempt.number }, 'slice has no data');
    }
    return outcome;
  } catch (thrown) {
    const error = toSyncError(thrown);
    if (error.code === 'INTERRUPTED') {
      // A shutdown cut a wait short: nothing was written, and the ledger keeps the slice as it was.
      log.info({ status: 'interrupted', durationMs: elapsed() }, 'slice interrupted by the shutdown; left as it was');
      return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error, final: false };
    }
    const final = !error.retryable || attempt.isLast;
    if (!final) {
      log.warn({ status: 'retrying', code: error.code, err: error, durationMs: elapsed() }, 'attempt failed, will retry');
      return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error, final };
    }
    const recorded = await recordFinalFailure({ slice, attempt, deps }, error, elapsed());
    log.error({ status: 'failed', code: recorded.code, err: recorded, rows: 0, durationMs: elapsed(), attempts: attempt.number }, 'slice failed');
    return { status: 'failed', slice, attempt: attempt.number, durationMs: elapsed(), error: recorded, final };
  }
}
