import type { SyncError } from '../../src/errors/sync-error.js';
import { exportSlice } from '../../src/export/export-slice.js';
import type { ExportSliceDeps } from '../../src/export/export-slice-deps.js';
import type { ExportSliceOptions } from '../../src/export/export-slice-options.js';
import { recordWorkerDeath } from '../../src/export/record-worker-death.js';
import type { Logger } from '../../src/logging/logger.js';
import type { SliceAttempt, SliceOutcome } from '../../src/outcomes/slice-outcome.js';
import type { JobDeaths, QueueJobContext } from '../../src/queue/queue-job.js';
import { sliceLogFields, type Slice } from '../../src/slice/slice.js';
import type { ExportSliceData } from './data.js';

/**
 * One attempt at one slice end to end (see {@link exportSlice}): what the in-process runner (`run`,
 * `nightly`, `demo`) and the queue worker both call. It never throws: trouble is the outcome, and the
 * ledger holds the outcome whenever it is final.
 */
export function attemptExportSlice(slice: Slice, attempt: SliceAttempt, deps: ExportSliceDeps, options: ExportSliceOptions = {}): Promise<SliceOutcome> {
  return exportSlice(slice, attempt, deps, options);
}

/** What a queued export job came to: an attempt's outcome, or failed unattempted because its workers kept dying. */
export type ExportSliceResult = { readonly kind: 'attempted'; readonly outcome: SliceOutcome } | { readonly kind: 'died'; readonly error: SyncError };

export interface ExportSliceHandlerDeps {
  /** One attempt at the slice: {@link attemptExportSlice} with the process's services. */
  readonly attemptSlice: (slice: Slice, attempt: SliceAttempt, options: { readonly force: boolean }) => Promise<SliceOutcome>;
  /**
   * Fails the slice for good as `WORKER_DIED` (ledger, log, metric, alert) without attempting it;
   * resolves to the error recorded. See {@link deadSliceRecorder}.
   */
  readonly failDeadSlice: (slice: Slice, deaths: JobDeaths) => Promise<SyncError>;
  /** `queue.maxStalledCount`: stalls past it mean the slice itself kills its workers. */
  readonly maxStalledCount: number;
  /** Called when this worker takes over a job another worker left stalled (for the metric). */
  readonly onStalledTakeover?: () => void;
  readonly logger: Logger;
}

/**
 * A queued export job: the slice attempted as in-process, unless its job stalled more than
 * `queue.maxStalledCount` times (checked first: whatever killed the workers would kill this one).
 * Such a slice is failed for good by the worker holding the job, before it leaves `active`.
 */
export async function handleExportSlice(data: ExportSliceData, context: QueueJobContext, deps: ExportSliceHandlerDeps): Promise<ExportSliceResult> {
  const { slice } = data;
  if (context.stalls > deps.maxStalledCount) {
    return { kind: 'died', error: await deps.failDeadSlice(slice, { stalls: context.stalls, starts: context.earlierStarts }) };
  }
  // Started more often than attempts were made: an earlier start never finished, because its
  // worker crashed, was killed, or was blocked past queue.lockDurationMs.
  if (context.earlierStarts >= context.attempt.number) {
    deps.onStalledTakeover?.();
    deps.logger.warn(
      { ...sliceLogFields(slice), jobId: context.jobId, previousAttempts: context.attempt.number - 1, starts: context.earlierStarts + 1, stalls: context.stalls },
      'took over a stalled job: the worker that had it stopped renewing its lock (crashed, killed, or blocked longer than queue.lockDurationMs)',
    );
  }
  return { kind: 'attempted', outcome: await deps.attemptSlice(slice, context.attempt, { force: data.force }) };
}

export interface DeadSliceRecorderOptions {
  readonly deps: ExportSliceDeps;
  readonly maxStalledCount: number;
  /** Told every slice failed this way, to alert on them together. */
  readonly onDeath?: (slice: Slice, error: SyncError) => void;
}

/** The `failDeadSlice` of a worker: the slice failed for good as `WORKER_DIED` in the ledger, then told to `onDeath`. */
export function deadSliceRecorder(options: DeadSliceRecorderOptions): (slice: Slice, deaths: JobDeaths) => Promise<SyncError> {
  return async (slice, deaths) => {
    const outcome = await recordWorkerDeath(slice, { ...deaths, maxStalledCount: options.maxStalledCount }, options.deps);
    options.onDeath?.(slice, outcome.error);
    return outcome.error;
  };
}

/**
 * One export request for `slice`, its answer discarded: whether the export endpoint accepts the
 * fleet's token again after credential trouble paused the worker (see `CredentialsPause`). Throws
 * what a job would have met.
 */
export async function probeExportEndpoint(slice: Slice, deps: Pick<ExportSliceDeps, 'client' | 'settings'>): Promise<void> {
  const format = deps.settings.formats[slice.reportType] ?? deps.settings.defaultFormat;
  const download = await deps.client.download(slice, format);
  if (download.kind === 'file') await download.body.dispose();
}
