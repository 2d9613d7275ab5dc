import type { SyncError } from '../errors/sync-error.js';
import type { SliceAttempt } from '../outcomes/slice-outcome.js';
import type { Slice } from '../slice/slice.js';

/**
 * What the queue must do with a job once its handler ran, decided by the job (a pure mapping in
 * jobs/) and applied by the BullMQ worker (see `createExportWorker`):
 * - `complete`: the job is done; `value` is kept as its return value.
 * - `retry`: a BullMQ attempt is spent and the job comes back after the slice backoff
 *   (the service's Retry-After, when it sent one).
 * - `rate-limit`: the whole queue waits `pauseMs`, no attempt spent (a 429).
 * - `fail`: failed for good, no retry (the outcome is final and already in the ledger).
 * - `put-back`: back in the queue as it was after `delayMs`, no attempt spent (a shutdown).
 * - `pause-for-credentials`: every job would meet the same refusal: the worker pauses and the job
 *   goes back to the queue after `delayMs`.
 * `stopWorker` on `retry` and `fail` says the trouble is this worker's own configuration.
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
 * One kind of queued job, as the worker runs it: the worker knows only this interface, and the
 * jobs themselves (jobs/) are handed in by the command that starts it, so the library never
 * depends on them. Its methods are declared as methods on purpose: a list of jobs with different
 * data types is then a `QueueJob[]`.
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
