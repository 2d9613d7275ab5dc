import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Settings } from '../../src/config/settings-schema.js';
import { createLogger } from '../../src/logging/logger.js';
import { refillBackfillJob } from '../../jobs/refill-backfill/refill-backfill-job.js';
import type { Ledger } from '../../src/warehouse/ledger/ledger.js';
import { ExportQueue } from '../../src/queue/export-queue.js';
import { createExportWorker } from '../../src/queue/export-worker.js';
import { noOpExportSliceJob } from '../helpers/no-op-export-job.js';

export interface DrainOptions {
  readonly redisUrl: string;
  readonly settings: Settings;
  readonly concurrency: number;
  readonly timeoutMs: number;
  /** Runs the refill steps of backfill plans too, reading this ledger. */
  readonly ledger?: Ledger;
  /** First attempts to wait for, when jobs are still being queued as the drain starts. */
  readonly expected?: number;
}

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
 * `removeOnFail` from `settings.queue`), so it is exactly what real workers do. With a `ledger`, the
 * worker also runs backfill plans' refill steps, as real workers do.
 */
export async function drainExportQueue(options: DrainOptions): Promise<DrainResult> {
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
      noOpExportSliceJob({
        settings: options.settings,
        logger,
        seen: (_slice, attempt) => {
          if (attempt.number === 1) attempted += 1;
          mostAttempts = Math.max(mostAttempts, attempt.number);
        },
      }),
      ...(options.ledger ? [refillBackfillJob({ exportQueue, ledger: options.ledger, logger })] : []),
    ],
    exportQueue,
    logger,
  });
  worker.on('error', (error) => logger.error({ err: error }, 'drain worker error'));
  try {
    const deadline = Date.now() + options.timeoutMs;
    // Jobs may still be on their way (a process queueing beside the drain): wait for all of them.
    while (attempted < (options.expected ?? 0) || (await exportQueue.unfinished()) > 0) {
      if (Date.now() > deadline) throw new Error(`the queue was not drained within ${options.timeoutMs} ms`);
      await sleep(50);
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
