import { SyncError } from '../errors/sync-error.js';
import { retryCommand } from '../outcomes/retry-command.js';
import type { SliceOutcome } from '../outcomes/slice-outcome.js';
import { sliceLogFields, type Slice } from '../slice/slice.js';
import type { ExportSliceDeps } from './export-slice-deps.js';
import { recordFinalFailure } from './record-final-failure.js';

/** How a queued slice's job stalled: what the queue counted before it gave up on it. */
export interface WorkerDeaths {
  /** Times the job stalled: the worker holding it stopped renewing its lock. */
  readonly stalls: number;
  /** Times a worker started the slice before now, retries included. */
  readonly starts: number;
  /** `queue.maxStalledCount`, for the reason. */
  readonly maxStalledCount: number;
}

/**
 * Fails a queued slice for good as `WORKER_DIED` once its workers died more than
 * `queue.maxStalledCount` times, without attempting it: whatever killed them would kill this one.
 * Told like any final failure, with how to retry once the cause is fixed. Never throws.
 */
export async function recordWorkerDeath(slice: Slice, deaths: WorkerDeaths, deps: ExportSliceDeps): Promise<SliceOutcome & { status: 'failed' }> {
  const retry = retryCommand('backfill', { from: slice.reportDate, to: slice.reportDate, portfolios: [slice.portfolioId], reportTypes: [slice.reportType] }, undefined, [
    'WORKER_DIED',
  ]);
  const error = new SyncError(
    'WORKER_DIED',
    `the worker running this slice stopped without finishing it (crashed, killed, e.g. for memory, or blocked longer than queue.lockDurationMs) ` +
      `${deaths.stalls} times, more than queue.maxStalledCount (${deaths.maxStalledCount}) allows, so no worker takes it again; ` +
      `look for a crash or an out-of-memory kill in the workers' logs, fix its cause, then retry it with: ${retry}`,
  );
  const recorded = await recordFinalFailure({ slice, attempt: { number: deaths.starts, isLast: true }, deps }, error, 0);
  const outcome = { status: 'failed', slice, attempt: deaths.starts, durationMs: 0, error: recorded, final: true } as const;
  deps.metrics?.sliceFinished(outcome);
  deps.logger.error(
    { ...sliceLogFields(slice), status: 'failed', code: recorded.code, err: recorded, stalls: deaths.stalls, attempts: deaths.starts },
    'slice failed: its job stalled past queue.maxStalledCount, so it is not handed to another worker again',
  );
  return outcome;
}
