import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Settings } from '../config/settings-schema.js';
import type { Slice } from '../slice.js';
import { EXPORT_SLICE_JOB, sliceJobId, type SliceJobData } from './slice-job.js';

/** Name of the backoff strategy the export worker registers (Retry-After aware). */
export const SLICE_BACKOFF = 'report-sync';

export interface ExportQueueOptions {
  readonly connection: Redis;
  readonly settings: Pick<Settings, 'queue' | 'retry'>;
}

/** The BullMQ queue of export jobs; its owner calls `close()`. */
export class ExportQueue {
  readonly queue: Queue;
  readonly #settings: ExportQueueOptions['settings'];

  constructor(options: ExportQueueOptions) {
    this.#settings = options.settings;
    this.queue = new Queue(options.settings.queue.name, { connection: options.connection, prefix: options.settings.queue.prefix });
  }

  /** The options every export job gets: attempts, backoff, priority, trimming. */
  jobOptions(slice: Slice, priority: number): JobsOptions {
    const { queue, retry } = this.#settings;
    return {
      jobId: sliceJobId(slice),
      priority,
      attempts: retry.attempts,
      backoff: { type: SLICE_BACKOFF },
      removeOnComplete: { age: queue.keepCompleted.ageSeconds, count: queue.keepCompleted.count },
      removeOnFail: { age: queue.keepFailed.ageSeconds, count: queue.keepFailed.count },
    };
  }

  /**
   * Queues the slices in bulk, `queue.addBatchSize` per round trip, reading `slices` lazily so a
   * ten-year backfill is never held whole. A slice whose job is still in the queue is not added again.
   * @returns how many slices were handed to the queue
   */
  async addSlices(slices: Iterable<Slice> | AsyncIterable<Slice>, priority: number, onBatch?: (handed: number) => void): Promise<number> {
    let handed = 0;
    let batch: { name: string; data: SliceJobData; opts: JobsOptions }[] = [];
    const flush = async () => {
      await this.queue.addBulk(batch);
      handed += batch.length;
      batch = [];
      onBatch?.(handed);
    };
    for await (const slice of slices) {
      const data: SliceJobData = { portfolioId: slice.portfolioId, reportType: slice.reportType, reportDate: slice.reportDate };
      batch.push({ name: EXPORT_SLICE_JOB, data, opts: this.jobOptions(slice, priority) });
      if (batch.length >= this.#settings.queue.addBatchSize) await flush();
    }
    if (batch.length > 0) await flush();
    return handed;
  }

  /** Export jobs not finished yet: waiting, prioritized, delayed or running. */
  async unfinished(): Promise<number> {
    const counts = await this.queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'waiting-children');
    return Object.values(counts).reduce((sum, count) => sum + count, 0);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
