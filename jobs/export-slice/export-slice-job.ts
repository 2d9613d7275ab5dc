import type { QueueJob } from '../../src/queue/queue-job.js';
import { EXPORT_SLICE_JOB } from '../../src/queue/slice-job.js';
import { sliceLogFields } from '../../src/slice/slice.js';
import { parseExportSliceData, type ExportSliceData } from './data.js';
import { handleExportSlice, type ExportSliceHandlerDeps, type ExportSliceResult } from './handler.js';
import { exportSliceQueueAction, type ExportSliceQueueLimits } from './queue-outcome.js';

export interface ExportSliceJobOptions extends ExportSliceHandlerDeps {
  readonly limits: ExportSliceQueueLimits;
}

/**
 * The export job as the queue worker runs it: one slice per job, under the name the library's
 * queue adds slices with (`ExportQueue.addSlices`).
 */
export function exportSliceJob(options: ExportSliceJobOptions): QueueJob<ExportSliceData, ExportSliceResult> {
  return {
    name: EXPORT_SLICE_JOB,
    parse: parseExportSliceData,
    run: (data, context) => handleExportSlice(data, context, options),
    toQueueAction: (result) => exportSliceQueueAction(result, options.limits),
    stalledOut: async ({ slice }, deaths) => {
      // BullMQ failed the job itself: the worker that would have recorded it died too.
      await options.failDeadSlice(slice, deaths).catch((recordError: unknown) => {
        options.logger.error({ ...sliceLogFields(slice), err: recordError }, 'could not record the failure of a job BullMQ failed for stalling');
      });
    },
  };
}
