import type { Slice } from '../slice/slice.js';
import { isReportType } from '../reports/report-types.js';

/** Name of the job that exports one slice. */
export const EXPORT_SLICE_JOB = 'export-slice';
/** Name of the job the nightly job scheduler fires: it plans the night and queues its slices. */
export const NIGHTLY_JOB = 'nightly-fan-out';
/** Id of the nightly job scheduler; one per queue, so registering it again replaces it. */
export const NIGHTLY_SCHEDULER_ID = 'nightly';

/**
 * The data of an export job: the slice, and `force` when the file is to be loaded again even if it
 * is the one already loaded; nothing else (no secrets ever go into Redis).
 */
export type SliceJobData = Slice & { readonly force?: true };

/**
 * The job id of a slice, the same every time, so queueing a slice that is already waiting adds
 * nothing. BullMQ refuses `:` in custom ids, hence the dashes.
 */
export function sliceJobId(slice: Slice): string {
  return `slice-${slice.portfolioId}-${slice.reportType}-${slice.reportDate}`;
}

/** The slice a job id of {@link sliceJobId} names, or undefined for any other id (the nightly job's, a stranger's). */
export function sliceOfJobId(jobId: string): Slice | undefined {
  const match = /^slice-(\d+)-(.+)-(\d{4}-\d{2}-\d{2})$/.exec(jobId);
  if (!match || !isReportType(match[2]!)) return undefined;
  return { portfolioId: Number(match[1]), reportType: match[2], reportDate: match[3]! };
}
