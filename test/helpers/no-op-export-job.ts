import { exportSliceJob } from '../../jobs/export-slice/export-slice-job.js';
import type { Settings } from '../../src/config/settings-schema.js';
import type { Logger } from '../../src/logging/logger.js';
import type { SliceAttempt } from '../../src/outcomes/slice-outcome.js';
import type { Slice } from '../../src/slice/slice.js';

/**
 * The product's export job with an attempt that fetches and records nothing: it tells `seen`
 * about the slice, then answers `no_data`. For tests and benchmarks of the queue itself, where
 * there is no service and no warehouse; a job that stalls out fails the test.
 */
export function noOpExportSliceJob(options: {
  readonly settings: Settings;
  readonly logger: Logger;
  readonly seen: (slice: Slice, attempt: SliceAttempt) => void | Promise<void>;
}): ReturnType<typeof exportSliceJob> {
  const { settings, logger } = options;
  return exportSliceJob({
    attemptSlice: async (slice, attempt) => {
      await options.seen(slice, attempt);
      return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: 0, unchanged: false };
    },
    failDeadSlice: async () => {
      throw new Error('no job of a no-op export worker stalls out');
    },
    maxStalledCount: settings.queue.maxStalledCount,
    limits: { maxRetryAfterMs: settings.retry.maxRetryAfterMs, credentialsRetryMs: settings.token.rejectedRetryMs },
    logger,
  });
}
