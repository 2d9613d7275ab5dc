import { DelayedError, MetricsTime, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Settings } from '../config/settings-schema.js';
import { SyncError, type SyncErrorCode } from '../errors/sync-error.js';
import type { Logger } from '../logging/logger.js';
import { RetryPolicy } from '../retry/retry-policy.js';
import type { SliceAttempt, SliceOutcome } from '../outcomes/slice-outcome.js';
import { parseSlice, sliceLogFields, type Slice } from '../slice/slice.js';
import { SLICE_BACKOFF, type ExportQueue } from './export-queue.js';
import type { NightInProgress } from './follow-night.js';
import { nightlyPlanSettingsOf, type NightlyPlanSettings } from './nightly-schedule.js';
import { EXPORT_SLICE_JOB, NIGHTLY_JOB, type SliceJobData } from './slice-job.js';

export interface ExportWorkerOptions {
  readonly connection: Redis;
  readonly settings: Pick<Settings, 'queue' | 'retry'>;
  /**
   * Who this worker is, kept with each job it takes (BullMQ's `processedBy`, shown by Bull Board),
   * so that the worker holding a job can be found. @defaultValue none
   */
  readonly name?: string;
  /** Jobs at once in this process. */
  readonly concurrency: number;
  /** One attempt at one slice: the export job, the same as in-process. */
  readonly attemptSlice: (slice: Slice, attempt: SliceAttempt, options: { readonly force: boolean }) => Promise<SliceOutcome>;
  /** The nightly plan (yesterday plus lookback re-checks) for the settings a fan-out job carries. */
  readonly planNightly: (nightly: NightlyPlanSettings) => Promise<{ readonly slices: readonly Slice[]; readonly reportDate: string; readonly lookbackFrom: string }>;
  /**
   * Follows a queued night until its slices have outcomes and tells it (log, alert, freshness);
   * `interrupted` on a shutdown. Without it, the fan-out job ends once the slices are queued.
   */
  readonly followNight?: (night: NightInProgress) => Promise<'told' | 'interrupted'>;
  /** The warehouse's clock (see `warehouseNow`): a fan-out counts the outcomes its ledger stamps after it, whichever machine wrote them. */
  readonly warehouseNow: () => Promise<string>;
  /** This process's own nightly settings, for a fan-out job that carries none (registered by an older release). */
  readonly ownNightly: NightlyPlanSettings;
  /** Where the nightly fan-out queues its slices, and whose rate limit a 429 sets. */
  readonly exportQueue: ExportQueue;
  readonly logger: Logger;
  /** Called once when an error makes every further job pointless (this worker's own configuration). */
  readonly onFatal?: (error: SyncError) => void;
  /** Called when this worker takes over a job another worker left stalled (for the metric). */
  readonly onStalledTakeover?: () => void;
  /**
   * Fails for good (`WORKER_DIED`: ledger, log, metric, alert) a slice whose job stalled more than
   * `queue.maxStalledCount` times, without attempting it; resolves to the error recorded. Called by
   * the one worker holding the job, before the job leaves `active`, so a worker dying meanwhile
   * leaves the job to be failed by the next one, never lost.
   */
  readonly failDeadSlice: (slice: Slice, deaths: { readonly stalls: number; readonly starts: number }) => Promise<SyncError>;
  /**
   * Called on credential trouble (see {@link CREDENTIAL_TROUBLE}) with the job's slice: every job
   * would meet it the same way, so the worker stops taking jobs until the upstream accepts again.
   * The job is put back in the queue either way (not failed for good, no attempt spent); without
   * this, the trouble is fatal.
   */
  readonly onCredentialsRefused?: (error: SyncError, slice: Slice) => void | Promise<void>;
  /** How long a job refused for its credentials waits before it is offered again (`token.rejectedRetryMs`). */
  readonly credentialsRetryMs?: number;
}

/**
 * Trouble every job would meet the same way until the upstream accepts again: the identity provider
 * refusing the credentials, or the export endpoint refusing a token that renewing did not cure.
 */
const CREDENTIAL_TROUBLE: ReadonlySet<SyncErrorCode> = new Set<SyncErrorCode>(['AUTH_REJECTED', 'EXPORT_UNAUTHORIZED']);

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
 * The job's slice, checked: job data sits in Redis, where anyone who can reach it can change it,
 * and it is about to become a URL and a query. A bad one fails the job for good; it is not written
 * to the ledger, whose key it would be.
 */
function sliceOfJob(job: Job<SliceJobData>, logger: Logger): Slice {
  try {
    return parseSlice(job.data);
  } catch (error) {
    if (!(error instanceof SyncError)) throw error;
    logger.error({ jobId: job.id, code: error.code, err: error }, 'refused a job whose data is not a valid slice');
    throw new UnrecoverableError(`${error.code}: job data is not a valid slice: ${error.message}`);
  }
}

/**
 * The BullMQ worker: its processor is the very export job `run` uses in-process. Final failures
 * (permanent, or out of attempts) are already in the ledger and become `UnrecoverableError`s so
 * BullMQ does not retry them; retryable ones use BullMQ attempts with the same backoff as
 * in-process runs; a 429 pauses the whole queue for its Retry-After instead of burning an attempt;
 * credential trouble pauses this worker and puts the job back, no attempt spent.
 */
export function createExportWorker(options: ExportWorkerOptions): Worker {
  const { settings, logger } = options;
  const policy = new RetryPolicy(settings.retry);
  let fatalReported = false;

  const processor = async (job: Job<SliceJobData>, token?: string) => {
    if (job.name === NIGHTLY_JOB) {
      let nightly = nightlyPlanSettingsOf(job.data);
      if (!nightly) {
        logger.warn({ jobId: job.id }, "the nightly job carries no usable settings (registered by an older release?): planning it with this worker's own");
        nightly = options.ownNightly;
      }
      // A night already fanned out (its worker stopped while following it) is only followed.
      let night = (job.data as { night?: NightInProgress }).night;
      if (!night) {
        const since = await options.warehouseNow();
        const plan = await options.planNightly(nightly);
        const { queued, requeued, pending } = await options.exportQueue.addSlices(plan.slices, settings.queue.nightlyPriority);
        logger.info(
          {
            planned: plan.slices.length,
            queued,
            requeued,
            alreadyPending: pending,
            portfolios: nightly.portfolios,
            reportTypes: nightly.reportTypes,
            lookbackDays: nightly.lookbackDays,
          },
          'nightly fan-out queued its slices',
        );
        night = {
          reportDate: plan.reportDate,
          range: { from: plan.lookbackFrom, to: plan.reportDate, portfolios: nightly.portfolios, reportTypes: nightly.reportTypes },
          since,
          expected: queued + requeued + pending,
        };
        await job.updateData({ ...job.data, night } as unknown as SliceJobData);
      }
      if (options.followNight && (await options.followNight(night)) === 'interrupted') {
        // Stopping: the night goes back to the queue, and whichever worker takes it follows it on.
        await job.moveToDelayed(Date.now() + 1_000, token);
        throw new DelayedError();
      }
      return { expected: night.expected };
    }
    if (job.name !== EXPORT_SLICE_JOB) throw new UnrecoverableError(`unknown job name ${job.name}`);

    const slice = sliceOfJob(job, logger);
    // Checked before anything is attempted: whatever killed the workers before would kill this one.
    if (job.stalledCounter > settings.queue.maxStalledCount) {
      const error = await options.failDeadSlice(slice, { stalls: job.stalledCounter, starts: job.attemptsStarted - 1 });
      throw new UnrecoverableError(`${error.code}: ${error.message}`);
    }
    const attempts = job.opts.attempts ?? 1;
    const number = job.attemptsMade + 1;
    // Started more often than attempts were made (plus this one): an earlier start never finished,
    // because its worker crashed, was killed, or was blocked past queue.lockDurationMs.
    if (job.attemptsStarted > number) {
      options.onStalledTakeover?.();
      logger.warn(
        { ...sliceLogFields(slice), jobId: job.id, previousAttempts: job.attemptsMade, starts: job.attemptsStarted, stalls: job.stalledCounter },
        'took over a stalled job: the worker that had it stopped renewing its lock (crashed, killed, or blocked longer than queue.lockDurationMs)',
      );
    }
    const outcome = await options.attemptSlice(slice, { number, isLast: number >= attempts }, { force: job.data.force === true });
    if (outcome.status !== 'failed') {
      return { status: outcome.status, rows: outcome.status === 'loaded' ? outcome.rowCount : 0 };
    }
    const { error } = outcome;
    if (error.code === 'INTERRUPTED') {
      // The worker is shutting down and cut the slice short before writing anything: the job goes
      // back for the next worker as it was, no attempt spent.
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    if (CREDENTIAL_TROUBLE.has(error.code)) {
      // An upstream answer, not this worker's configuration alone: the worker pauses rather than
      // exits (one misjudged answer would stop the fleet), and the job waits in the queue.
      if (options.onCredentialsRefused) {
        await options.onCredentialsRefused(error, slice);
      } else if (!fatalReported) {
        fatalReported = true;
        options.onFatal?.(error);
      }
      await job.moveToDelayed(Date.now() + (options.credentialsRetryMs ?? 600_000), token);
      throw new DelayedError();
    }
    if (error.fatal && !fatalReported) {
      fatalReported = true;
      options.onFatal?.(error);
    }
    if (outcome.final) throw new UnrecoverableError(`${error.code}: ${error.message}`);
    if (error.code === 'EXPORT_RATE_LIMITED' && error.retryAfterMs !== undefined) {
      const pauseMs = Math.min(error.retryAfterMs, settings.retry.maxRetryAfterMs);
      logger.warn({ ...sliceLogFields(slice), pauseMs }, 'service asked to slow down: queue paused for its Retry-After');
      await options.exportQueue.queue.rateLimit(pauseMs);
      throw Worker.RateLimitError();
    }
    throw new SliceAttemptError(error);
  };

  const { rateLimit } = settings.queue;
  const worker = new Worker<SliceJobData>(settings.queue.name, processor, {
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
    if (job?.name !== EXPORT_SLICE_JOB || error.message !== BULLMQ_STALLED_REASON) return;
    let slice: Slice;
    try {
      slice = parseSlice(job.data);
    } catch {
      return;
    }
    options.failDeadSlice(slice, { stalls: job.stalledCounter, starts: job.attemptsStarted - 1 }).catch((recordError: unknown) => {
      logger.error({ ...sliceLogFields(slice), jobId: job.id, err: recordError }, 'could not record the failure of a job BullMQ failed for stalling');
    });
  });
  return worker;
}
