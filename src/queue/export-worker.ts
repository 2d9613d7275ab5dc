import { DelayedError, MetricsTime, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { RedisClient } from './redis-connection.js';
import type { Settings } from '../config/settings-schema.js';
import { SyncError } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { RetryPolicy } from '../retry/retry-policy.js';
import { sliceLogFields, type Slice } from '../slice/slice.js';
import { SLICE_BACKOFF, type ExportQueue } from './export-queue.js';
import { JobsInFlight } from './jobs-in-flight.js';
import type { QueueAction, QueueJob } from './queue-job.js';

export interface ExportWorkerOptions {
  readonly connection: RedisClient;
  readonly settings: Pick<Settings, 'queue' | 'retry'>;
  /**
   * Who this worker is, kept with each job it takes (BullMQ's `processedBy`, shown by Bull Board),
   * so that the worker holding a job can be found. @defaultValue none
   */
  readonly name?: string;
  /** Jobs at once in this process. */
  readonly concurrency: number;
  /**
   * The kinds of job this worker runs (jobs/: export one slice, plan a night), by their name. Each
   * says what its data is, what it does and what the queue does with its result; the worker only
   * applies that.
   */
  readonly jobs: readonly QueueJob[];
  /** Whose rate limit a 429 sets. */
  readonly exportQueue: ExportQueue;
  readonly logger: Logger;
  /** Called once when an error makes every further job pointless (this worker's own configuration). */
  readonly onFatal?: (error: SyncError) => void;
  /**
   * Called on credential trouble with the job's slice: every job would meet it the same way, so the
   * worker stops taking jobs until the upstream accepts again. The job is put back in the queue
   * either way (not failed for good, no attempt spent); without this, the trouble is fatal.
   */
  readonly onCredentialsRefused?: (error: SyncError, slice: Slice) => void | Promise<void>;
  /** Counts the jobs being processed, for a close that must know when none is (`closeWorker`). @defaultValue a count of its own */
  readonly inFlight?: JobsInFlight;
}

/**
 * BullMQ's own reason for a job it failed itself, one stall after ours (see `maxStalledCount`
 * below): the processor never ran for it.
 */
const BULLMQ_STALLED_REASON = 'job stalled more than allowable limit';

/** A retryable failure as BullMQ sees it; carries the service's Retry-After to the backoff strategy. */
class SliceAttemptError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(error: SyncError) {
    super(`${error.code}: ${error.message}`);
    this.name = 'SliceAttemptError';
    this.retryAfterMs = error.retryAfterMs;
  }
}

/**
 * The BullMQ worker running the given {@link QueueJob}s. Bad job data fails the job for good,
 * never reaching the ledger, whose key it would be; a result's {@link QueueAction} is applied as
 * BullMQ attempts with backoff, `UnrecoverableError`, the queue rate limit, or a delayed move.
 */
export function createExportWorker(options: ExportWorkerOptions): Worker {
  const { settings, logger } = options;
  const policy = new RetryPolicy(settings.retry);
  const jobs = new Map(options.jobs.map((definition) => [definition.name, definition]));
  let fatalReported = false;
  const reportFatal = (error: SyncError) => {
    if (fatalReported) return;
    fatalReported = true;
    options.onFatal?.(error);
  };

  const putBack = async (job: Job, token: string | undefined, delayMs: number): Promise<never> => {
    await job.moveToDelayed(Date.now() + delayMs, token);
    throw new DelayedError();
  };

  const apply = async (action: QueueAction, job: Job, token: string | undefined): Promise<unknown> => {
    switch (action.kind) {
      case 'complete':
        return action.value;
      case 'put-back':
        return putBack(job, token, action.delayMs);
      case 'pause-for-credentials':
        // An upstream answer, not this worker's configuration alone: the worker pauses rather than
        // exits (one misjudged answer would stop the fleet), and the job waits in the queue.
        if (options.onCredentialsRefused) await options.onCredentialsRefused(action.error, action.slice);
        else reportFatal(action.error);
        return putBack(job, token, action.delayMs);
      case 'fail':
        if (action.stopWorker) reportFatal(action.stopWorker);
        throw new UnrecoverableError(action.reason);
      case 'rate-limit':
        logger.warn({ ...sliceLogFields(action.slice), pauseMs: action.pauseMs }, 'service asked to slow down: queue paused for its Retry-After');
        await options.exportQueue.queue.rateLimit(action.pauseMs);
        throw Worker.RateLimitError();
      case 'retry':
        if (action.stopWorker) reportFatal(action.error);
        throw new SliceAttemptError(action.error);
    }
  };

  const processJob = async (job: Job, token?: string) => {
    const definition = jobs.get(job.name);
    if (!definition) throw new UnrecoverableError(`unknown job name ${job.name}`);
    let data: unknown;
    try {
      data = definition.parse(job.data);
    } catch (error) {
      if (!(error instanceof SyncError)) throw error;
      // The job's parse words its errors "data is not …".
      logger.error({ jobId: job.id, code: error.code, err: error }, `refused a job whose ${error.message}`);
      throw new UnrecoverableError(`${error.code}: job ${error.message}`);
    }
    const number = job.attemptsMade + 1;
    const result = await definition.run(data, {
      jobId: job.id,
      attempt: { number, isLast: number >= (job.opts.attempts ?? 1) },
      stalls: job.stalledCounter,
      earlierStarts: job.attemptsStarted - 1,
      keepWithJob: (fields) => job.updateData({ ...(job.data as object), ...fields }),
    });
    return apply(definition.toQueueAction(result), job, token);
  };
  const inFlight = options.inFlight ?? new JobsInFlight();
  const processor = (job: Job, token?: string) => inFlight.run(() => processJob(job, token));

  const { rateLimit } = settings.queue;
  const worker = new Worker(settings.queue.name, processor, {
    connection: options.connection,
    prefix: settings.queue.prefix,
    name: options.name,
    concurrency: options.concurrency,
    lockDuration: settings.queue.lockDurationMs,
    stalledInterval: settings.queue.stalledIntervalMs,
    // One more than ours: the processor fails the job itself (ledger first) at the stall past
    // queue.maxStalledCount. BullMQ fails it without the processor only if the worker doing that
    // died too; the 'failed' listener below then records it.
    maxStalledCount: settings.queue.maxStalledCount + 1,
    limiter: rateLimit.max > 0 ? { max: rateLimit.max, duration: rateLimit.durationMs } : undefined,
    // Every job is trimmed by these; no job carries its own.
    removeOnComplete: { age: settings.queue.keepCompleted.ageSeconds, count: settings.queue.keepCompleted.count },
    removeOnFail: { age: settings.queue.keepFailed.ageSeconds, count: settings.queue.keepFailed.count },
    // Completed and failed jobs per minute, the last hour in one small Redis list: the dashboard's rate.
    metrics: { maxDataPoints: MetricsTime.ONE_HOUR },
    settings: {
      backoffStrategy: (attemptsMade, type, err) => (type === SLICE_BACKOFF ? policy.delayMs(attemptsMade, (err as SliceAttemptError | undefined)?.retryAfterMs) : 0),
    },
  });
  // Told by whichever worker's stalled check found it; the worker that takes it over says so too.
  worker.on('stalled', (jobId, previous) => {
    logger.warn({ jobId, previousState: previous }, 'a job stalled (its worker stopped renewing the lock) and went back to the queue for another worker');
  });
  worker.on('failed', (job, error) => {
    if (!job || error.message !== BULLMQ_STALLED_REASON) return;
    const definition = jobs.get(job.name);
    if (!definition?.stalledOut) return;
    let data: unknown;
    try {
      data = definition.parse(job.data);
    } catch {
      return;
    }
    void definition.stalledOut(data, { stalls: job.stalledCounter, starts: job.attemptsStarted - 1 });
  });
  return worker;
}
