import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from './redis-connection.js';
import type { Settings } from '../config/settings-schema.js';
import type { Slice } from '../slice/slice.js';
import { BackfillPlans } from './backfill-plan.js';
import { QueueingError } from './queueing-error.js';
import { EXPORT_SLICE_JOB, NIGHTLY_SCHEDULER_ID, sliceJobId, type SliceJobData } from './slice-job.js';

/** Name of the backoff strategy the export worker registers (Retry-After aware). */
export const SLICE_BACKOFF = 'report-sync';

export interface ExportQueueOptions {
  readonly connection: RedisClient;
  readonly settings: Pick<Settings, 'queue' | 'retry'>;
}

/** What {@link ExportQueue.addSlices} did with the slices it was given. */
export interface AddedSlices {
  /** Slices with no job in the queue, now queued. */
  readonly queued: number;
  /** Slices whose earlier job had finished (completed, or failed for good), queued again. */
  readonly requeued: number;
  /** Slices left alone because their job is still waiting, delayed or running. */
  readonly pending: number;
  /** Slices left alone because their job finished at or after `finishedSinceMs` (see {@link ExportQueue.addSlices}). */
  readonly finishedSince: number;
  /** Set when a shutdown stopped the queueing before every slice was handed to Redis. */
  readonly interrupted?: true;
}

export interface AddSlicesOptions {
  /** Queue every slice again, even one whose file is the one already loaded. */
  readonly force?: boolean;
  /** Called after each batch Redis took, with the slices handled so far. */
  readonly onBatch?: (handled: number) => void;
  /** Stops at the next batch. */
  readonly signal?: AbortSignal;
  /**
   * A slice whose job finished at or after this time (ms since the epoch, as BullMQ stamps it) is
   * left alone rather than queued again: a plan taking up a step it was interrupted in finds its own
   * slices finished. @defaultValue every finished job is queued again
   */
  readonly finishedSinceMs?: number;
}

/** What one batch did. */
type Sent = { readonly queued: number; readonly requeued: number; readonly pending: number; readonly finishedSince: number };

/** The BullMQ queue of export jobs; its owner calls `close()`. */
export class ExportQueue {
  readonly queue: Queue;
  /** The backfill plans of this queue, kept beside its jobs. */
  readonly plans: BackfillPlans;
  readonly #settings: ExportQueueOptions['settings'];
  readonly #redis: RedisClient;
  /** Shared by every job: BullMQ only reads it. */
  readonly #backoff = { type: SLICE_BACKOFF } as const;

  constructor(options: ExportQueueOptions) {
    this.#settings = options.settings;
    this.#redis = options.connection;
    this.queue = new Queue(options.settings.queue.name, { connection: options.connection, prefix: options.settings.queue.prefix });
    this.plans = new BackfillPlans({ redis: options.connection, keyOf: (name) => this.queue.toKey(name) });
    // A BullMQ queue with no 'error' listener prints every failed reconnect as a raw stack trace on
    // stderr. The connection's own listener (createRedisConnection) already logs Redis trouble,
    // once per 10 s, and commands wait for the reconnect; nothing is lost by staying quiet here.
    this.queue.on('error', () => undefined);
  }

  /**
   * The options every export job gets: attempts, backoff, priority. Trimming (queue.keepCompleted /
   * keepFailed) is the workers' option, not each job's: BullMQ packs and stores per-job options
   * with every job, a real cost in Redis on a large backfill. Every field named, no spread: at
   * millions of jobs V8's slow path for properties written after a spread shows.
   */
  jobOptions(slice: Slice, priority: number): JobsOptions {
    return { attempts: this.#settings.retry.attempts, backoff: this.#backoff, jobId: sliceJobId(slice), priority };
  }

  /**
   * Queues the slices lazily, `queue.addBatchSize` per round trip. A pending slice is left alone; one
   * whose kept job finished is queued again (BullMQ would drop it as a duplicate and a recovery would
   * silently do nothing). A `signal` stops at the next batch; `interrupted` says so.
   * @throws QueueingError when Redis refuses a batch, with what was queued before it
   */
  async addSlices(slices: Iterable<Slice> | AsyncIterable<Slice>, priority: number, options: AddSlicesOptions = {}): Promise<AddedSlices> {
    const batchSize = this.#settings.queue.addBatchSize;
    const added: { queued: number; requeued: number; pending: number; finishedSince: number; interrupted?: true } = { queued: 0, requeued: 0, pending: 0, finishedSince: 0 };
    let batch: { name: string; data: SliceJobData; opts: JobsOptions }[] = [];
    let sending: Promise<void> | undefined;
    let failure: { error: unknown } | undefined;
    const settle = async () => {
      await sending;
      if (failure) throw new QueueingError(failure.error, { ...added });
    };
    const flush = async () => {
      const jobs = batch;
      batch = [];
      // One batch at Redis while the next one is planned: Redis runs a script per job, and waiting
      // for it before planning on would leave this process idle half the time. Two in flight at
      // most, so memory stays two batches deep however long the range. The rejection is caught at
      // once and rethrown here, never left unhandled while the next batch is built.
      await settle();
      sending = this.#send(jobs, options.finishedSinceMs).then(
        (sent) => {
          added.queued += sent.queued;
          added.requeued += sent.requeued;
          added.pending += sent.pending;
          added.finishedSince += sent.finishedSince;
          options.onBatch?.(added.queued + added.requeued + added.pending + added.finishedSince);
        },
        (error: unknown) => {
          if (error instanceof PartlySent) {
            added.queued += error.sent.queued;
            added.requeued += error.sent.requeued;
            added.pending += error.sent.pending;
            added.finishedSince += error.sent.finishedSince;
          }
          failure = { error: error instanceof PartlySent ? error.cause : error };
        },
      );
    };
    const stopping = () => {
      if (!options.signal?.aborted) return false;
      added.interrupted = true;
      return true;
    };
    const add = (slice: Slice): boolean => {
      const data: SliceJobData = options.force
        ? { portfolioId: slice.portfolioId, reportType: slice.reportType, reportDate: slice.reportDate, force: true }
        : { portfolioId: slice.portfolioId, reportType: slice.reportType, reportDate: slice.reportDate };
      batch.push({ name: EXPORT_SLICE_JOB, data, opts: this.jobOptions(slice, priority) });
      return batch.length >= batchSize;
    };
    try {
      // A plain generator is walked synchronously: `for await` over it would cost a promise and a
      // microtask per slice, millions of them on a ten-year range.
      // A full batch is sent unless a shutdown came meanwhile: then it is dropped, never half-sent.
      if (Symbol.iterator in slices) {
        for (const slice of slices) {
          if (!add(slice)) continue;
          if (stopping()) break;
          await flush();
        }
      } else {
        for await (const slice of slices) {
          if (!add(slice)) continue;
          if (stopping()) break;
          await flush();
        }
      }
      if (batch.length > 0 && !added.interrupted && !stopping()) await flush();
    } finally {
      // Never return (or close the queue) with a batch still on its way.
      await sending;
    }
    await settle();
    return added;
  }

  /**
   * One batch: which of its jobs exist (one script call, cheap on a fresh range), which of those
   * have finished, those removed, then everything but the pending ones added. On a Redis Cluster
   * a script or pipeline must stay within one slot: every key here is under the prefix's hash tag.
   */
  async #send(jobs: { name: string; data: SliceJobData; opts: JobsOptions }[], finishedSinceMs = Number.POSITIVE_INFINITY): Promise<Sent> {
    const client = this.#redis;
    const queue = this.queue;
    const known = await this.#existing(jobs);
    const finished = new Set<string>();
    const finishedLately = new Set<string>();
    if (known.length > 0) {
      const scores = await client
        .pipeline(
          known.flatMap((job) => [
            ['zscore', queue.keys.completed!, job.opts.jobId!],
            ['zscore', queue.keys.failed!, job.opts.jobId!],
          ]),
        )
        .exec();
      // A finished job's score in its set is when it finished.
      known.forEach((job, i) => {
        const finishedAt = [scores?.[2 * i]?.[1], scores?.[2 * i + 1]?.[1]].find((score) => score !== null && score !== undefined);
        if (finishedAt === undefined) return;
        if (Number(finishedAt) >= finishedSinceMs) finishedLately.add(job.opts.jobId!);
        else finished.add(job.opts.jobId!);
      });
      // A finished job is not locked, so it can always be removed; 0 means it was removed meanwhile.
      // Sent together: ioredis pipelines them on the one connection.
      await Promise.all([...finished].map((jobId) => queue.remove(jobId)));
    }
    const pendingIds = new Set(known.map((job) => job.opts.jobId!).filter((jobId) => !finished.has(jobId) && !finishedLately.has(jobId)));
    const leftAlone = (jobId: string) => pendingIds.has(jobId) || finishedLately.has(jobId);
    const toAdd = pendingIds.size + finishedLately.size === 0 ? jobs : jobs.filter((job) => !leftAlone(job.opts.jobId!));
    if (toAdd.length > 0) {
      try {
        await queue.addBulk(toAdd);
      } catch (error) {
        // Part of the batch may have landed before Redis refused the rest (a full Redis refuses
        // job by job): count what is there, so that the total said stays true.
        const landed = await this.#existing(toAdd).catch(() => []);
        const ids = landed.map((job) => job.opts.jobId!);
        const requeued = ids.filter((jobId) => finished.has(jobId)).length;
        throw new PartlySent(error, { queued: ids.length - requeued, requeued, pending: pendingIds.size, finishedSince: finishedLately.size });
      }
    }
    return { queued: toAdd.length - finished.size, requeued: finished.size, pending: pendingIds.size, finishedSince: finishedLately.size };
  }

  /**
   * The jobs among `jobs` that Redis holds, in one call: a command per job costs this process
   * more than the check itself costs Redis.
   */
  async #existing<T extends { opts: JobsOptions }>(jobs: readonly T[]): Promise<T[]> {
    if (jobs.length === 0) return [];
    const found = (await this.#redis.eval(EXISTING_KEYS, jobs.length, ...jobs.map((job) => this.queue.toKey(job.opts.jobId!)))) as number[];
    return found.map((index) => jobs[index]!);
  }

  /**
   * Jobs not finished yet: waiting, prioritized, delayed or running; the nightly schedule's next
   * firing, which always waits in the delayed set, is not one of them.
   */
  async unfinished(): Promise<number> {
    const counts = await this.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'waiting-children');
    const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
    const scheduler = await this.queue.getJobScheduler(NIGHTLY_SCHEDULER_ID);
    // BullMQ names a scheduler's next job repeat:<scheduler id>:<when it fires>.
    const next = scheduler?.next === undefined ? undefined : await this.queue.getJobState(`repeat:${NIGHTLY_SCHEDULER_ID}:${scheduler.next}`);
    return next === 'delayed' ? total - 1 : total;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** The 0-based positions of the keys that exist. */
const EXISTING_KEYS = `local found = {} for i, key in ipairs(KEYS) do if redis.call('EXISTS', key) == 1 then found[#found + 1] = i - 1 end end return found`;

/** A batch Redis took only part of before refusing the rest: what did land, and why the rest did not. */
class PartlySent extends Error {
  constructor(
    override readonly cause: unknown,
    readonly sent: Sent,
  ) {
    super('part of a batch of jobs was refused', { cause });
  }
}
