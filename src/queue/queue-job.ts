import type { SyncError } from '../errors/sync-error.js';
import type { SliceAttempt } from '../outcomes/slice-outcome.js';
import type { Slice } from '../slice/slice.js';

/**
 * What the queue does once a job's handler ran (decided in jobs/, applied by the worker): `retry`
 * spends an attempt; `rate-limit` waits `pauseMs`; `fail` is final (already in the ledger); `put-back`
 * and `pause-for-credentials` spend none. `stopWorker` blames this worker's own configuration.
 */
export type QueueAction =
  | { readonly kind: 'complete'; readonly value: unknown }
  | { readonly kind: 'retry'; readonly error: SyncError; readonly stopWorker: boolean }
  | { readonly kind: 'rate-limit'; readonly pauseMs: number; readonly slice: Slice }
  | { readonly kind: 'fail'; readonly reason: string; readonly stopWorker?: SyncError }
  | { readonly kind: 'put-back'; readonly delayMs: number }
  | { readonly kind: 'pause-for-credentials'; readonly error: SyncError; readonly slice: Slice; readonly delayMs: number };

/** What the worker tells a job's handler about the BullMQ job it runs. */
export interface QueueJobContext {
  readonly jobId: string | undefined;
  /** This attempt as BullMQ counts them, with whether a retry can follow it. */
  readonly attempt: SliceAttempt;
  /** Times a stalled check found the job's worker gone (BullMQ's `stalledCounter`). */
  readonly stalls: number;
  /** Times the job was started before this start. */
  readonly earlierStarts: number;
  /** Adds fields to the job's data in Redis, for whichever worker takes it next (a night already fanned out). */
  readonly keepWithJob: (fields: Readonly<Record<string, unknown>>) => Promise<void>;
}

/** How many times a job's workers died under it, for a job BullMQ failed itself for stalling. */
export interface JobDeaths {
  readonly stalls: number;
  readonly starts: number;
}

/**
 * One kind of queued job as the worker runs it. Jobs (jobs/) are handed in by the command, so the
 * library never depends on them. Methods are declared as methods on purpose: a list of jobs with
 * different data types is then a `QueueJob[]`.
 */
export interface QueueJob<Data = unknown, Result = unknown> {
  /** The name BullMQ jobs of this kind carry. */
  readonly name: string;
  /**
   * The job's data as read from Redis, checked: anyone who can reach Redis can change it. Throws a
   * `SyncError` naming the bad field; the job then fails for good.
   */
  parse(data: unknown): Data;
  /** What the job does. Its trouble comes back in the result; a throw counts as a failed attempt. */
  run(data: Data, context: QueueJobContext): Promise<Result>;
  /** What the queue must do with the result. */
  toQueueAction(result: Result): QueueAction;
  /** Called for a job BullMQ failed itself for stalling too often: the processor never ran for it. */
  stalledOut?(data: Data, deaths: JobDeaths): Promise<void>;
}
