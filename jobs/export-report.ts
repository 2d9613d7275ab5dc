import { exportSlice } from '../src/export/export-slice.js';
import type { ExportSliceDeps } from '../src/export/export-slice-deps.js';
import type { ExportSliceOptions } from '../src/export/export-slice-options.js';
import { EXPORT_SLICE_JOB, type SliceJobData } from '../src/queue/slice-job.js';
import type { SliceAttempt, SliceOutcome } from '../src/outcomes/slice-outcome.js';
import type { Slice } from '../src/slice/slice.js';

/** The name export jobs are queued under (`backfill`, the nightly fan-out) and the worker takes them by. */
export const EXPORT_REPORT_JOB_NAME = EXPORT_SLICE_JOB;

/** What an export job carries: the slice, and `force` to load a file that is already loaded (no secrets ever go into Redis). */
export type ExportReportPayload = SliceJobData;

/** What the export job needs; one set per process, shared by all its jobs. */
export type ExportReportDeps = ExportSliceDeps;

/**
 * The export job's handler, the one the in-process runner (`run`, `nightly`) and the queue worker
 * (`worker`) both register: one attempt at one slice end to end (see {@link exportSlice}). It never
 * throws: it returns the attempt's outcome, and the ledger holds it whenever it is final.
 */
export function exportReport(slice: Slice, attempt: SliceAttempt, deps: ExportReportDeps, options: ExportSliceOptions = {}): Promise<SliceOutcome> {
  return exportSlice(slice, attempt, deps, options);
}
