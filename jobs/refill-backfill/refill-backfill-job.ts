import type { QueueJob } from '../../src/queue/queue-job.js';
import { REFILL_BACKFILL_JOB } from '../../src/queue/refill-backfill.js';
import { parseRefillBackfillData, type RefillBackfillData } from './data.js';
import { handleRefillBackfill, type RefillBackfillHandlerDeps, type RefillBackfillResult } from './handler.js';
import { refillBackfillQueueAction } from './queue-outcome.js';

/** A backfill plan's refill step as the queue worker runs it. */
export function refillBackfillJob(deps: RefillBackfillHandlerDeps): QueueJob<RefillBackfillData, RefillBackfillResult> {
  return {
    name: REFILL_BACKFILL_JOB,
    parse: parseRefillBackfillData,
    run: (data) => handleRefillBackfill(data, deps),
    toQueueAction: refillBackfillQueueAction,
  };
}
