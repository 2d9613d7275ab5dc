import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Settings } from '../../src/config/settings-schema.js';
import { createLogger } from '../../src/logging/logger.js';
import { exportSliceJob } from '../../jobs/export-slice/export-slice-job.js';
import { ExportQueue } from '../../src/queue/export-queue.js';
import { createExportWorker } from '../../src/queue/export-worker.js';

/** How a queue was drained. */
export interface DrainResult {
  readonly ms: number;
  /** Jobs still in the `completed` set afterwards (what trimming kept). */
  readonly keptCompleted: number;
  readonly keptFailed: number;
  /** First attempts the worker made (one per job), and the highest attempt number it saw (1 when no job ran twice). */
  readonly attempted: number;
  readonly mostAttempts: number;
}

/**
 * Completes every queued export job with the product's own worker (`createExportWorker`: the
 * queue name, prefix, lock and stalled settings of `settings`), but with an attempt that records
 * nothing and returns `no_data` at once: the point is what Redis holds once millions of jobs are
 * finished under the queue's trimming settings, not the exports themselves (two cores cannot run
 * two million real exports in a benchmark). Trimming is the worker's option (`removeOnComplete` /
 * `removeOnFail` from `settings.queue`), so it is exactly what real workers do.
 */
export async function drainExportQueue(options: { redisUrl: string; settings: Settings; concurrency: number; timeoutMs: number }): Promise<DrainResult> {
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const workerRedis = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const logger = createLogger({ level: 'warn' });
  const exportQueue = new ExportQueue({ connection: redis, settings: options.settings });
  const startedAt = performance.now();
  // Two numbers rather than a set of slices: at full size the queue holds millions of jobs.
  let attempted = 0;
  let mostAttempts = 0;
  const worker = createExportWorker({
    connection: workerRedis,
    settings: options.settings,
    concurrency: options.concurrency,
    // No warehouse here, and no nightly job to count outcomes for.
    jobs: [
      exportSliceJob({
        attemptSlice: async (slice, attempt) => {
          if (attempt.number === 1) attempted += 1;
          mostAttempts = Math.max(mostAttempts, attempt.number);
          return { status: 'no_data', final: true, slice, attempt: attempt.number, durationMs: 0, unchanged: false };
        },
        failDeadSlice: async () => {
          throw new Error('no job stalls while a benchmark drains the queue');
        },
        maxStalledCount: options.settings.queue.maxStalledCount,
        limits: { maxRetryAfterMs: options.settings.retry.maxRetryAfterMs, credentialsRetryMs: options.settings.token.rejectedRetryMs },
        logger,
      }),
    ],
    exportQueue,
    logger,
  });
  worker.on('error', (error) => logger.error({ err: error }, 'drain worker error'));
  try {
    const deadline = Date.now() + options.timeoutMs;
    while ((await exportQueue.unfinished()) > 0) {
      if (Date.now() > deadline) throw new Error(`the queue was not drained within ${options.timeoutMs} ms`);
      await sleep(250);
    }
    const ms = performance.now() - startedAt;
    const counts = await exportQueue.queue.getJobCounts('completed', 'failed');
    return { ms, keptCompleted: counts.completed ?? 0, keptFailed: counts.failed ?? 0, attempted, mostAttempts };
  } finally {
    await worker.close();
    await exportQueue.close();
    redis.disconnect();
    workerRedis.disconnect();
  }
}
